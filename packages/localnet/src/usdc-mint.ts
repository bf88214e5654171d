// The USDC-like token: a 6-decimal SPL Token mint whose authority the operator holds, so the
// gateway's faucet can mint test dollars. Mints go through the chain as real transactions.
import { type Address, getProgramDerivedAddress } from '@solana/kit';
import type { Chain } from './chain/chain.ts';
import { SYSTEM_PROGRAM } from './chain/faucet.ts';
import { encodeMint, TOKEN_PROGRAM } from './chain/token-account.ts';
import { decodeBase58, encodeBase58 } from './wire/base58.ts';
import { buildLegacyTransaction, type KeypairSigner } from './wire/legacy-transaction.ts';
import { decodeWireTransaction } from './wire/wire-transaction.ts';

export const USDC_DECIMALS = 6;
export const USDC_SYMBOL = 'USDC';
const ATA_PROGRAM = 'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL';
const MINT_TO_CHECKED = 14;
const CREATE_IDEMPOTENT = 1;

/** Places the initialised mint at `mint` (genesis only). */
export function placeUsdcMint(chain: Chain, mint: Uint8Array, authority: Uint8Array): void {
  const data = encodeMint(authority, USDC_DECIMALS);
  chain.setAccount(mint, {
    lamports: chain.minimumBalanceForRentExemption(BigInt(data.length)),
    data,
    owner: TOKEN_PROGRAM,
    executable: false,
    rentEpoch: 0n,
  });
}

export async function associatedTokenAddress(owner: string, mint: string): Promise<string> {
  const [address] = await getProgramDerivedAddress({
    programAddress: ATA_PROGRAM as Address,
    seeds: [
      decodeBase58(owner) as Uint8Array,
      decodeBase58(TOKEN_PROGRAM) as Uint8Array,
      decodeBase58(mint) as Uint8Array,
    ],
  });
  return address;
}

/** Creates `owner`'s associated token account if needed and mints `amount` atomic units to it. */
export async function mintUsdc(
  chain: Chain,
  authority: KeypairSigner,
  mint: string,
  owner: string,
  amount: bigint,
): Promise<{ signature: string; tokenAccount: string }> {
  const tokenAccount = await associatedTokenAddress(owner, mint);
  const ownerBytes = decodeBase58(owner);
  if (ownerBytes?.length !== 32) throw new Error(`not an address: ${owner}`);
  const mintBytes = decodeBase58(mint) as Uint8Array;
  const ataBytes = decodeBase58(tokenAccount) as Uint8Array;
  const tokenProgram = decodeBase58(TOKEN_PROGRAM) as Uint8Array;
  const mintData = new Uint8Array(10);
  mintData[0] = MINT_TO_CHECKED;
  new DataView(mintData.buffer).setBigUint64(1, amount, true);
  mintData[9] = USDC_DECIMALS;
  const blockhash = decodeBase58(chain.blockAt('processed').blockhash) as Uint8Array;
  const bytes = buildLegacyTransaction(
    [authority],
    [
      {
        programId: decodeBase58(ATA_PROGRAM) as Uint8Array,
        accounts: [
          { pubkey: authority.publicKey, signer: true, writable: true },
          { pubkey: ataBytes, signer: false, writable: true },
          { pubkey: ownerBytes, signer: false, writable: false },
          { pubkey: mintBytes, signer: false, writable: false },
          { pubkey: SYSTEM_PROGRAM, signer: false, writable: false },
          { pubkey: tokenProgram, signer: false, writable: false },
        ],
        data: new Uint8Array([CREATE_IDEMPOTENT]),
      },
      {
        programId: tokenProgram,
        accounts: [
          { pubkey: mintBytes, signer: false, writable: true },
          { pubkey: ataBytes, signer: false, writable: true },
          { pubkey: authority.publicKey, signer: true, writable: false },
        ],
        data: mintData,
      },
    ],
    blockhash,
  );
  const record = chain.sendTransaction(decodeWireTransaction(bytes), true);
  return { signature: record.signature, tokenAccount: encodeBase58(ataBytes) };
}
