import { callerOf } from './api-caller.ts';
import type { TestGateway } from './test-gateway.ts';

/** A caller of the gateway with one custodial wallet: a buyer or a seller in a payment test. */
export interface Party {
  readonly accountId: string;
  readonly key: string;
  readonly wallet: string;
}

/**
 * A new account (Standard plan unless asked) whose custodial wallet of `chain` is created through the
 * API, as a caller would, then given `fund` of it when that is asked.
 */
export async function newParty(
  gw: TestGateway,
  chain: 'solana' | 'evm',
  options: { plan?: 'standard' | 'premium'; fund?: (wallet: string) => Promise<unknown> | undefined } = {},
): Promise<Party> {
  const caller = await gw.newCaller(options.plan ?? 'standard');
  const created = await callerOf(gw).post(caller.key, '/wallets', { chain });
  if (created.statusCode !== 200) throw new Error(`wallet creation failed: ${created.body}`);
  const wallet = created.json().address as string;
  await options.fund?.(wallet);
  return { ...caller, wallet };
}
