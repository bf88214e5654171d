import { parseArgs } from 'node:util';
import type { ChainAdapter } from '../chains/chain-adapter.ts';
import { ChainError } from '../chains/chain-error.ts';
import { chainFamily, chainFamilyOfNetwork } from '../chains/chain-families.ts';
import { ADDRESS_RULE, NetworkRegistry } from '../chains/network-registry.ts';
import type { Config } from '../config.ts';
import { addressFamily, type ChainFamily } from '../domain/address.ts';
import { GatewayError, invalidParameters } from '../domain/gateway-error.ts';
import { AmountError, decimalTextToAtomic, toAtomic } from '../domain/money.ts';
import { FaucetService } from '../services/wallets/faucet-service.ts';
import { type CliContext, requiredFlag } from './cli-context.ts';

export const FLAGS = {
  to: { type: 'string' },
  amount: { type: 'string' },
  token: { type: 'string' },
  network: { type: 'string' },
  json: { type: 'boolean' },
} as const;

/** A chain reached from outside the process that runs it, and what its faucet may not do. */
interface LocalChain {
  readonly adapter: ChainAdapter;
  readonly tokensRefused: string | undefined;
}

/**
 * `gate402 faucet`: funds an address on the local chains a running `gate402 serve` (or `gate402 localnet`)
 * started, like `solana airdrop`, with no API key. It finds the chains as the server configured them
 * (LOCALNET_PORT / SOLANA_RPC_URL, ANVIL_PORT / EVM_RPC_URLS, DATA_DIR) and applies POST /faucet's rules
 * and bounds through the same FaucetService, so the two answer alike.
 *
 * @example
 *   npx gate402 faucet --to 9xQe… --amount 2.5                 # SOL
 *   npx gate402 faucet --to 0xAbC… --amount 100 --token USDC --json
 */
export async function faucetCommand(ctx: CliContext, args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: FLAGS, allowPositionals: false });
  const address = requiredFlag(values, 'to');
  const amount = exactAmount(requiredFlag(values, 'amount'));
  const { token, network } = values;
  const family = addressFamily(address);
  if (family === undefined) throw invalidParameters({ address: ADDRESS_RULE });
  if (network !== undefined && networkFamily(network) !== family) {
    throw invalidParameters(
      networkFamily(network) === undefined
        ? { network: 'is not a configured network; see GET /networks' }
        : { address: `is not an address on ${network}` },
    );
  }

  const chain = await connect(ctx.config, family);
  try {
    if (token !== undefined && chain.adapter.info.isLocal && chain.tokensRefused !== undefined) {
      throw new GatewayError('FORBIDDEN', {
        message: `The faucet cannot mint ${token}: ${chain.tokensRefused}.`,
      });
    }
    const result = await new FaucetService(new NetworkRegistry([chain.adapter]))
      .fund({ address, amount, token, network })
      .catch((error: unknown) => {
        throw error instanceof ChainError ? fromChainError(error) : error;
      });
    ctx.result(
      result,
      `sent ${values.amount} ${result.currency} to ${result.address} on ${result.network}\nsignature: ${result.signature}`,
    );
  } finally {
    await chain.adapter.close();
  }
}

/** The local chain of `family`, where a running gateway would have started it. */
async function connect(config: Config, family: ChainFamily): Promise<LocalChain> {
  const plan = chainFamily(family).faucetChain(config);
  return reach(plan.where, plan.rpcUrl, () => plan.connect());
}

async function reach<T>(where: string, rpcUrl: string, open: () => Promise<T>): Promise<T> {
  try {
    return await open();
  } catch (error) {
    if (error instanceof ChainError && error.kind === 'unavailable') {
      // The origin only: a configured URL may carry an API key in its path or query.
      throw new GatewayError('CHAIN_UNAVAILABLE', {
        message: `no ${where} answers at ${new URL(rpcUrl).origin} — start \`npx gate402 serve\` first`,
        cause: error,
      });
    }
    throw error instanceof ChainError ? fromChainError(error) : error;
  }
}

function networkFamily(network: string): ChainFamily | undefined {
  return chainFamilyOfNetwork(network)?.family;
}

/**
 * The amount as the number POST /faucet would receive, refused when a double cannot hold the digits as
 * written (`100.0000000000000000001` would otherwise pass the bound as 100).
 */
function exactAmount(text: string): number {
  if (!/^-?\d+(?:\.\d+)?$/.test(text)) throw invalidParameters({ amount: 'must be a number, e.g. 2.5' });
  const value = Number(text);
  const digits = text.replace(/^-/, '');
  const decimals = digits.split('.')[1]?.length ?? 0;
  let exact: boolean;
  try {
    exact = toAtomic(Math.abs(value), decimals) === decimalTextToAtomic(digits, decimals);
  } catch (error) {
    if (!(error instanceof AmountError)) throw error;
    exact = false;
  }
  if (!exact) {
    throw invalidParameters({
      amount: `${text} cannot be held exactly: use fewer digits (at most the currency's decimals, within the bounds)`,
    });
  }
  return value;
}

/** What the chain said, as the HTTP error handler would map it, with the chain's words kept for the operator. */
function fromChainError(error: ChainError): GatewayError {
  const code =
    error.kind === 'unavailable'
      ? 'CHAIN_UNAVAILABLE'
      : error.kind === 'insufficient_funds'
        ? 'INSUFFICIENT_BALANCE'
        : 'INTERNAL_ERROR';
  return new GatewayError(code, {
    message: `The faucet transaction did not go through: ${error.message}.`,
    cause: error,
  });
}
