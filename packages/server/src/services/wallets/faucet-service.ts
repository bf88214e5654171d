import { ChainError } from '../../chains/chain-error.ts';
import { chainFamily } from '../../chains/chain-families.ts';
import type { NetworkRegistry } from '../../chains/network-registry.ts';
import { type ErrorDetails, GatewayError, invalidParameters } from '../../domain/gateway-error.ts';
import { AmountError, toAtomic } from '../../domain/money.ts';
import type { NetworkId } from '../../domain/network.ts';

/** Upper bounds of one faucet request, in whole units: enough to test with, too little to hoard. */
export const FAUCET_MAX_NATIVE = 100;
export const FAUCET_MAX_TOKEN = 1_000_000;

export interface FaucetRequest {
  readonly address: string;
  readonly amount: number;
  readonly token?: string | undefined;
  readonly network?: string | undefined;
}

export interface FaucetResult {
  readonly network: NetworkId;
  readonly address: string;
  readonly amount: number;
  readonly currency: string;
  readonly signature: string;
}

/** Funds addresses with native currency or a known token, on local networks only. */
export class FaucetService {
  constructor(private readonly networks: NetworkRegistry) {}

  async fund(request: FaucetRequest): Promise<FaucetResult> {
    const chain = this.networks.resolve({ address: request.address, network: request.network });
    const faucet = chain.faucet;
    if (!chain.info.isLocal || faucet === undefined) {
      throw new GatewayError('FORBIDDEN', {
        message: `The faucet works only on local networks, not on ${chain.info.name}.`,
      });
    }
    if (request.token === undefined) {
      const { decimals, symbol } = chain.info.nativeCurrency;
      const atomic = atomicAmount(request.amount, decimals, FAUCET_MAX_NATIVE);
      const signature = await refusedAsInvalid(
        () => faucet.fundNative(request.address, atomic),
        Object.fromEntries(
          Object.entries(chainFamily(chain.info.family).faucetNativeRefusal(symbol)).map(([field, why]) => [
            field,
            `${REFUSED}: ${why}`,
          ]),
        ),
      );
      return { ...base(request, chain.info.id), currency: symbol, signature };
    }
    const token = chain.info.tokens.find((t) => t.symbol.toLowerCase() === request.token?.toLowerCase());
    if (token === undefined) {
      throw invalidParameters({
        token: `is not a known token on ${chain.info.name}; known: ${chain.info.tokens.map((t) => t.symbol).join(', ') || 'none'}`,
      });
    }
    const atomic = atomicAmount(request.amount, token.decimals, FAUCET_MAX_TOKEN);
    const signature = await refusedAsInvalid(() => faucet.fundToken(token.symbol, request.address, atomic), {
      address: REFUSED,
    });
    return { ...base(request, chain.info.id), currency: token.symbol, signature };
  }
}

const REFUSED = 'the chain refused the transfer';

/**
 * A local chain that refuses a faucet transfer itself (Solana: too little for a new account's rent; EVM:
 * a contract that takes no ETH) was asked for something it cannot do: a bad request, answered with
 * `details`, not a fault of the gateway. The chain's own words stay out of the answer (the cause).
 */
async function refusedAsInvalid(send: () => Promise<string>, details: ErrorDetails): Promise<string> {
  try {
    return await send();
  } catch (error) {
    if (error instanceof ChainError && (error.kind === 'rejected' || error.kind === 'invalid_transaction')) {
      throw new GatewayError('INVALID_PARAMETERS', {
        message: 'The local chain refused the faucet transfer.',
        details,
        cause: error,
      });
    }
    throw error;
  }
}

function base(request: FaucetRequest, network: NetworkId) {
  return { network, address: request.address, amount: request.amount };
}

function atomicAmount(amount: number, decimals: number, max: number): bigint {
  if (!(amount > 0 && amount <= max))
    throw invalidParameters({ amount: `must be greater than 0 and at most ${max}` });
  try {
    return toAtomic(amount, decimals);
  } catch (error) {
    if (error instanceof AmountError) throw invalidParameters({ amount: error.message });
    throw error;
  }
}
