import type { TokenInfo } from '../domain/network.ts';
import { canonicalAddress } from './canonical-address.ts';
import type { ChainAdapter } from './chain-adapter.ts';

/** A token the operator lists for a network (X402_EXTRA_ASSETS). */
export interface ListedToken {
  readonly network: string;
  readonly symbol: string;
  readonly address: string;
}

/**
 * The operator's listed tokens (X402_EXTRA_ASSETS) by network, with the decimals the chain states.
 * Checked once, at start: a network that is not configured, an address that is no token there, or a
 * symbol the network already uses for another token stops the start — a facilitator told to settle a
 * token must know exactly which one, and a seller's `asset: "SYMBOL"` must name one token only.
 */
export async function listedTokens(
  listed: readonly ListedToken[],
  adapters: readonly ChainAdapter[],
): Promise<Map<string, TokenInfo[]>> {
  const byNetwork = new Map<string, TokenInfo[]>();
  for (const token of listed) {
    const chain = adapters.find((a) => a.info.id === token.network);
    if (chain === undefined) {
      throw new Error(
        `X402_EXTRA_ASSETS lists ${token.symbol} for ${token.network}, which is not configured`,
      );
    }
    const address = canonicalAddress(token.address);
    const info = await chain.getTokenInfo(address);
    if (info === undefined) {
      throw new Error(`X402_EXTRA_ASSETS: ${address} is not a token on ${chain.info.name}`);
    }
    const tokens = byNetwork.get(chain.info.id) ?? [];
    const symbols = [
      chain.info.nativeCurrency.symbol,
      ...chain.info.tokens.map((t) => t.symbol),
      ...tokens.map((t) => t.symbol),
    ];
    if (symbols.some((s) => s.toUpperCase() === token.symbol.toUpperCase())) {
      throw new Error(`X402_EXTRA_ASSETS: ${chain.info.name} already has a token named ${token.symbol}`);
    }
    tokens.push({ symbol: token.symbol, address, decimals: info.decimals });
    byNetwork.set(chain.info.id, tokens);
  }
  return byNetwork;
}
