// The native mints (wrapped SOL) of SPL Token and Token-2022: every cluster has them, so wallets and
// `@solana/spl-token`'s createWrappedNativeAccount find a 9-decimal mint with no authorities at
// So111…112 and 9pan9…XejP. LiteSVM does not create them; the chain places them as operator accounts.
import type { Chain } from './chain/chain.ts';
import { TOKEN_2022_PROGRAM, TOKEN_PROGRAM } from './chain/token-account.ts';
import { decodeBase58 } from './wire/base58.ts';

export const NATIVE_MINT = 'So11111111111111111111111111111111111111112';
export const NATIVE_MINT_2022 = '9pan9bMn5HatX4EJdBwg9VgCa7Uz5HL8N1m5D3NdXejP';
const MINT_LEN = 82;
const NATIVE_DECIMALS = 9;

/** Places each native mint that is missing (at genesis, and once in a ledger made before they were). */
export function placeNativeMints(chain: Chain): void {
  for (const [address, owner] of [
    [NATIVE_MINT, TOKEN_PROGRAM],
    [NATIVE_MINT_2022, TOKEN_2022_PROGRAM],
  ] as const) {
    const key = decodeBase58(address) as Uint8Array;
    if (chain.getAccount(key)) continue;
    // COption::None mint and freeze authorities, supply 0, 9 decimals, initialised.
    const data = new Uint8Array(MINT_LEN);
    data[44] = NATIVE_DECIMALS;
    data[45] = 1;
    chain.setAccount(key, {
      lamports: chain.minimumBalanceForRentExemption(BigInt(MINT_LEN)),
      data,
      owner,
      executable: false,
      rentEpoch: 0n,
    });
  }
}
