import { addressFamily, type ChainFamily } from '../domain/address.ts';
import { GatewayError, invalidParameters } from '../domain/gateway-error.ts';
import type { NetworkInfo, TokenInfo } from '../domain/network.ts';
import type { ChainAdapter } from './chain-adapter.ts';

/** What an address must look like, wherever one is refused for its shape. */
export const ADDRESS_RULE = 'must be a Solana (base58) or EVM (0x…) address';

/**
 * The configured networks, keyed by CAIP-2 id. An address's shape picks the family; a request's
 * optional `network` picks among several networks of one family, else the family's default.
 */
export class NetworkRegistry {
  private readonly byId = new Map<string, ChainAdapter>();
  private readonly defaults = new Map<ChainFamily, ChainAdapter>();
  private readonly extraTokens: ReadonlyMap<string, readonly TokenInfo[]>;

  /**
   * @param extraTokens tokens the operator lists beyond each network's own known ones (X402_EXTRA_ASSETS),
   * by CAIP-2 id: listed by GET /networks, stated by sellers, settled by the built-in facilitator.
   */
  constructor(
    adapters: readonly ChainAdapter[],
    extraTokens: ReadonlyMap<string, readonly TokenInfo[]> = new Map(),
  ) {
    this.extraTokens = extraTokens;
    for (const adapter of adapters) {
      if (this.byId.has(adapter.info.id)) throw new Error(`network ${adapter.info.id} is configured twice`);
      this.byId.set(adapter.info.id, adapter);
      if (adapter.info.isDefault || !this.defaults.has(adapter.info.family)) {
        this.defaults.set(adapter.info.family, adapter);
      }
    }
    for (const network of extraTokens.keys()) {
      if (!this.byId.has(network))
        throw new Error(`tokens are listed for ${network}, which is not configured`);
    }
  }

  list(): NetworkInfo[] {
    return [...this.byId.values()].map((a) => ({
      ...a.info,
      isDefault: this.defaults.get(a.info.family) === a,
      tokens: this.tokensOf(a.info.id),
    }));
  }

  /** The tokens a network is known to carry: its own (the network's USDC) and those the operator listed. */
  tokensOf(networkId: string): readonly TokenInfo[] {
    const own = this.byId.get(networkId)?.info.tokens ?? [];
    const extra = this.extraTokens.get(networkId) ?? [];
    return extra.length === 0 ? own : [...own, ...extra];
  }

  get(networkId: string): ChainAdapter | undefined {
    return this.byId.get(networkId);
  }

  all(): ChainAdapter[] {
    return [...this.byId.values()];
  }

  /** The network named by `networkId`, or by the family of `address`; refuses what does not fit. */
  resolve(input: { address: string; network?: string | undefined; field?: string }): ChainAdapter {
    const field = input.field ?? 'address';
    const family = addressFamily(input.address);
    if (family === undefined) {
      throw invalidParameters({ [field]: ADDRESS_RULE });
    }
    if (input.network !== undefined) {
      const adapter = this.byId.get(input.network);
      if (adapter === undefined) {
        throw invalidParameters({ network: `is not a configured network; see GET /networks` });
      }
      if (adapter.info.family !== family) {
        throw invalidParameters({ [field]: `is not an address on ${adapter.info.name}` });
      }
      return adapter;
    }
    const adapter = this.defaults.get(family);
    if (adapter === undefined) {
      throw new GatewayError('INVALID_PARAMETERS', {
        message: `No ${family} network is configured.`,
        details: { [field]: `no ${family} network is configured` },
      });
    }
    return adapter;
  }

  async close(): Promise<void> {
    await Promise.all(this.all().map((a) => a.close()));
  }
}
