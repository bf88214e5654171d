// The fee a transaction pays: 5,000 lamports per signature (transaction and precompile
// signatures) plus the priority fee, ceil(compute-unit price × compute-unit limit / 1e6).
// LiteSVM charges it; this computes the same figure for `meta.fee` and `getFeeForMessage`.
import { rawKey, rawKeyOf } from '../wire/raw-key.ts';
import type { WireTransaction } from '../wire/wire-transaction.ts';

export const LAMPORTS_PER_SIGNATURE = 5000n;

const COMPUTE_BUDGET_PROGRAM = 'ComputeBudget111111111111111111111111111111';
const ED25519_PROGRAM = 'Ed25519SigVerify111111111111111111111111111';
const SECP256K1_PROGRAM = 'KeccakSecp256k11111111111111111111111111111';
const SECP256R1_PROGRAM = 'Secp256r1SigVerify1111111111111111111111111';

// Builtins get a small default compute-unit allocation, other programs 200,000 each
// (Agave's `reserve_minimal_cus_for_builtin_instructions`, which LiteSVM enables).
const BUILTIN_PROGRAMS = new Set(
  [
    '11111111111111111111111111111111',
    COMPUTE_BUDGET_PROGRAM,
    'Vote111111111111111111111111111111111111111',
    'Stake11111111111111111111111111111111111111',
    'Config1111111111111111111111111111111111111',
    'BPFLoader1111111111111111111111111111111111',
    'BPFLoader2111111111111111111111111111111111',
    'BPFLoaderUpgradeab1e11111111111111111111111',
    'LoaderV411111111111111111111111111111111111',
    'AddressLookupTab1e1111111111111111111111111',
    ED25519_PROGRAM,
    SECP256K1_PROGRAM,
    SECP256R1_PROGRAM,
  ].map(rawKeyOf),
);
const COMPUTE_BUDGET = rawKeyOf(COMPUTE_BUDGET_PROGRAM);
const PRECOMPILES = new Set([ED25519_PROGRAM, SECP256K1_PROGRAM, SECP256R1_PROGRAM].map(rawKeyOf));
const BUILTIN_DEFAULT_UNITS = 3000n;
const DEFAULT_UNITS = 200_000n;
const MAX_UNITS = 1_400_000n;
const MICRO_LAMPORTS_PER_LAMPORT = 1_000_000n;

export interface FeeDetails {
  readonly fee: bigint;
  readonly computeUnitLimit: bigint;
  readonly computeUnitPrice: bigint;
}

export function transactionFee(tx: WireTransaction): FeeDetails {
  let signatures = BigInt(tx.signatures.length);
  let limit: bigint | undefined;
  let price = 0n;
  let defaultLimit = 0n;
  for (const ix of tx.instructions) {
    const key = tx.staticKeys[ix.programIdIndex];
    const program = key ? rawKey(key) : '';
    const data = ix.data;
    if (program === COMPUTE_BUDGET) {
      const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
      if (data[0] === 2 && data.length >= 5) limit = BigInt(view.getUint32(1, true));
      if (data[0] === 3 && data.length >= 9) price = view.getBigUint64(1, true);
    } else if (PRECOMPILES.has(program) && data.length > 0) {
      signatures += BigInt(data[0] as number);
    }
    defaultLimit += BUILTIN_PROGRAMS.has(program) ? BUILTIN_DEFAULT_UNITS : DEFAULT_UNITS;
  }
  const computeUnitLimit = (limit ?? defaultLimit) > MAX_UNITS ? MAX_UNITS : (limit ?? defaultLimit);
  const priority = (price * computeUnitLimit + MICRO_LAMPORTS_PER_LAMPORT - 1n) / MICRO_LAMPORTS_PER_LAMPORT;
  return { fee: signatures * LAMPORTS_PER_SIGNATURE + priority, computeUnitLimit, computeUnitPrice: price };
}
