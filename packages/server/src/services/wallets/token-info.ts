import type { ChainAdapter } from '../../chains/chain-adapter.ts';
import type { NetworkRegistry } from '../../chains/network-registry.ts';
import { GatewayError } from '../../domain/gateway-error.ts';
import { atomicToDecimalText } from '../../domain/money.ts';

/** A token mint (Solana) or contract (EVM), as GET /token/info answers it. */
export interface TokenInfoView {
  address: string;
  network: string;
  /** spl-token, spl-token-2022 or erc20. */
  program: string;
  decimals: number;
  /** Atomic units, decimal text: exact whatever its size. */
  supply: string;
  /** Whole tokens; a JSON number, so only as exact as a double. */
  uiSupply: number;
  mintAuthority: string | null;
  freezeAuthority: string | null;
  name: string | null;
  symbol: string | null;
  uri: string | null;
}

/** Token look-ups (spec §4.8). */
export class TokenInfoService {
  constructor(private readonly networks: NetworkRegistry) {}

  async info(mint: string, network?: string): Promise<TokenInfoView> {
    const chain: ChainAdapter = this.networks.resolve({ address: mint, network, field: 'mint_address' });
    const token = await chain.getTokenInfo(mint);
    if (token === undefined) {
      throw new GatewayError('TOKEN_NOT_FOUND', {
        message: `${mint} is not a token mint on ${chain.info.name}.`,
        details: { mint_address: 'is not a token mint' },
      });
    }
    const supply = atomicToDecimalText(token.supply, token.decimals);
    return {
      address: token.address,
      network: chain.info.id,
      program: token.program,
      decimals: token.decimals,
      supply: token.supply.toString(),
      uiSupply: Number(supply),
      mintAuthority: token.mintAuthority,
      freezeAuthority: token.freezeAuthority,
      name: shown(token.name, MAX_NAME_LENGTH),
      symbol: shown(token.symbol, MAX_SYMBOL_LENGTH),
      uri: shown(token.uri, MAX_URI_LENGTH),
    };
  }
}

/**
 * Whoever deploys a token writes its name, symbol and uri, at any length: an ERC-20's name() may answer
 * megabytes, Token-2022 metadata is bounded only by the account's size. Longer than any real token's
 * (Metaplex allows 32, 10 and 200 bytes), they are shown as unknown rather than answered to every caller.
 */
const MAX_NAME_LENGTH = 256;
const MAX_SYMBOL_LENGTH = 64;
const MAX_URI_LENGTH = 2048;

function shown(text: string | undefined, maxLength: number): string | null {
  return text === undefined || text.length > maxLength ? null : text;
}
