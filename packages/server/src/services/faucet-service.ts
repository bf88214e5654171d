import type { NetworkRegistry } from '../chains/network-registry.ts';
import { GatewayError, invalidParameters } from '../domain/gateway-error.ts';
import { AmountError, toAtomic } from '../domain/money.ts';
import type { NetworkId } from '../domain/network.ts';

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
      const atomic = atomicAmount(request.amount, chain.info.nativeCurrency.decimals, FAUCET_MAX_NATIVE);
      const signature = await faucet.fundNative(request.address, atomic);
      return { ...base(request, chain.info.id), currency: chain.info.nativeCurrency.symbol, signature };
    }
    const token = chain.info.tokens.find((t) => t.symbol.toLowerCase() === request.token?.toLowerCase());
    if (token === undefined) {
      throw invalidParameters({
        token: `is not a known token on ${chain.info.name}; known: ${chain.info.tokens.map((t) => t.symbol).join(', ') || 'none'}`,
      });
    }
    const atomic = atomicAmount(request.amount, token.decimals, FAUCET_MAX_TOKEN);
    const signature = await faucet.fundToken(token.symbol, request.address, atomic);
    return { ...base(request, chain.info.id), currency: token.symbol, signature };
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
