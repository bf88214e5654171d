import {
  AccountRole,
  type Address,
  address,
  appendTransactionMessageInstructions,
  type Blockhash,
  compileTransaction,
  createTransactionMessage,
  getAddressEncoder,
  getProgramDerivedAddress,
  getTransactionEncoder,
  type Instruction,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
} from '@solana/kit';
import type { BlockhashAnswer, SolanaExactOption } from '../src/browser-paywall/page-data.ts';

/*
 * The `exact` Solana payment exactly as the stock @x402/svm client builds it (ExactSvmScheme 2.27):
 * a v0 message paid by the facilitator's fee payer, with SetComputeUnitLimit(20 000),
 * SetComputeUnitPrice(1 µlamport), TransferChecked of the amount from the buyer's associated token
 * account to the payee's, and a Memo (the seller's `extra.memo`, else 16 random bytes in hex so two
 * payments of the same amount differ). The buyer's wallet signs its slot; the fee payer's stays empty.
 */
const COMPUTE_BUDGET_PROGRAM = address('ComputeBudget111111111111111111111111111111');
const MEMO_PROGRAM = address('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');
const ASSOCIATED_TOKEN_PROGRAM = address('ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL');
const COMPUTE_UNIT_LIMIT = 20_000;
const COMPUTE_UNIT_PRICE_MICROLAMPORTS = 1n;
const MAX_MEMO_BYTES = 256;

/** The subset of a wallet-standard wallet the page uses. */
export interface StandardWallet {
  readonly name: string;
  readonly chains: readonly string[];
  readonly accounts: readonly WalletAccount[];
  readonly features: Readonly<Record<string, unknown>>;
}

interface WalletAccount {
  readonly address: string;
  readonly chains: readonly string[];
}

interface ConnectFeature {
  connect(input?: { silent?: boolean }): Promise<{ accounts: readonly WalletAccount[] }>;
}

interface SignTransactionFeature {
  signTransaction(
    ...inputs: { account: WalletAccount; transaction: Uint8Array; chain?: string }[]
  ): Promise<readonly { signedTransaction: Uint8Array }[]>;
}

/**
 * The wallet-standard registry of this page: wallets that registered before or after the page started
 * (the `wallet-standard:register-wallet` / `wallet-standard:app-ready` handshake, without a library).
 */
export function watchStandardWallets(onChange: (wallets: readonly StandardWallet[]) => void): void {
  const wallets: StandardWallet[] = [];
  const register = (...added: StandardWallet[]) => {
    for (const wallet of added) if (!wallets.includes(wallet)) wallets.push(wallet);
    onChange([...wallets]);
    return () => {
      for (const wallet of added) wallets.splice(wallets.indexOf(wallet), 1);
      onChange([...wallets]);
    };
  };
  const api = Object.freeze({ register });
  window.addEventListener('wallet-standard:register-wallet', (event) => {
    const callback = (event as CustomEvent<(api: { register: typeof register }) => void>).detail;
    if (typeof callback === 'function') callback(api);
  });
  window.dispatchEvent(new CustomEvent('wallet-standard:app-ready', { detail: api }));
}

/** A wallet that can connect and sign Solana transactions for `chain`. */
export function canPay(wallet: StandardWallet, chain: string): boolean {
  return (
    wallet.features['standard:connect'] !== undefined &&
    wallet.features['solana:signTransaction'] !== undefined &&
    wallet.chains.includes(chain)
  );
}

/** The Solana error a wallet threw, for people. */
export class WalletRefusal extends Error {}

/**
 * Connects `wallet`, builds the payment and has the wallet sign it: the payload of an x402 v2 `exact`
 * Solana payment (`{transaction: base64}`).
 */
export async function payWithSolana(
  wallet: StandardWallet,
  option: SolanaExactOption,
  requirement: Readonly<Record<string, unknown>>,
  freshBlockhash: () => Promise<BlockhashAnswer>,
  onStep: (status: string) => void,
): Promise<{ transaction: string }> {
  const connect = wallet.features['standard:connect'] as ConnectFeature;
  const sign = wallet.features['solana:signTransaction'] as SignTransactionFeature;
  onStep(`Connecting to ${wallet.name}…`);
  let accounts: readonly WalletAccount[];
  try {
    accounts = (await connect.connect()).accounts;
  } catch (error) {
    throw new WalletRefusal(`${wallet.name} did not connect: ${messageOf(error)}`);
  }
  const account =
    accounts.find((a) => a.chains.length === 0 || a.chains.includes(option.chain)) ?? accounts[0];
  if (account === undefined) throw new WalletRefusal(`${wallet.name} shared no account.`);

  const extra = (requirement.extra ?? {}) as Record<string, unknown>;
  if (typeof extra.feePayer !== 'string') throw new Error('The offer names no fee payer (extra.feePayer).');
  const memo = typeof extra.memo === 'string' ? extra.memo : randomHex(16);
  const memoBytes = new TextEncoder().encode(memo);
  if (memoBytes.byteLength > MAX_MEMO_BYTES) throw new Error(`extra.memo exceeds ${MAX_MEMO_BYTES} bytes`);

  const buyer = address(account.address);
  const mint = address(String(requirement.asset));
  const tokenProgram = address(option.tokenProgram);
  const [source, destination] = await Promise.all([
    associatedTokenAccount(buyer, mint, tokenProgram),
    associatedTokenAccount(address(String(requirement.payTo)), mint, tokenProgram),
  ]);
  const instructions: Instruction[] = [
    { programAddress: COMPUTE_BUDGET_PROGRAM, accounts: [], data: u32Instruction(2, COMPUTE_UNIT_LIMIT) },
    {
      programAddress: COMPUTE_BUDGET_PROGRAM,
      accounts: [],
      data: u64Instruction(3, COMPUTE_UNIT_PRICE_MICROLAMPORTS),
    },
    {
      programAddress: tokenProgram,
      accounts: [
        { address: source, role: AccountRole.WRITABLE },
        { address: mint, role: AccountRole.READONLY },
        { address: destination, role: AccountRole.WRITABLE },
        { address: buyer, role: AccountRole.READONLY_SIGNER },
      ],
      data: transferCheckedData(BigInt(String(requirement.amount)), option.decimals),
    },
    { programAddress: MEMO_PROGRAM, accounts: [], data: memoBytes },
  ];

  onStep('Preparing the transaction…');
  const lifetime = await freshBlockhash();
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(address(extra.feePayer as string), m),
    (m) => appendTransactionMessageInstructions(instructions, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        {
          blockhash: lifetime.blockhash as Blockhash,
          lastValidBlockHeight: BigInt(lifetime.lastValidBlockHeight),
        },
        m,
      ),
  );
  const unsigned = new Uint8Array(getTransactionEncoder().encode(compileTransaction(message)));

  onStep(`Confirm the payment of ${option.price} in ${wallet.name}…`);
  let signed: readonly { signedTransaction: Uint8Array }[];
  try {
    signed = await sign.signTransaction({ account, transaction: unsigned, chain: option.chain });
  } catch (error) {
    throw new WalletRefusal(`${wallet.name} did not sign: ${messageOf(error)}`);
  }
  const bytes = signed[0]?.signedTransaction;
  if (bytes === undefined) throw new WalletRefusal(`${wallet.name} returned no signed transaction.`);
  return { transaction: base64(bytes) };
}

async function associatedTokenAccount(
  owner: Address,
  mint: Address,
  tokenProgram: Address,
): Promise<Address> {
  const encoder = getAddressEncoder();
  const [pda] = await getProgramDerivedAddress({
    programAddress: ASSOCIATED_TOKEN_PROGRAM,
    seeds: [encoder.encode(owner), encoder.encode(tokenProgram), encoder.encode(mint)],
  });
  return pda;
}

function u32Instruction(discriminator: number, value: number): Uint8Array {
  const data = new Uint8Array(5);
  data[0] = discriminator;
  new DataView(data.buffer).setUint32(1, value, true);
  return data;
}

function u64Instruction(discriminator: number, value: bigint): Uint8Array {
  const data = new Uint8Array(9);
  data[0] = discriminator;
  new DataView(data.buffer).setBigUint64(1, value, true);
  return data;
}

/** SPL Token TransferChecked (instruction 12): amount u64 LE, decimals u8. */
function transferCheckedData(amount: bigint, decimals: number): Uint8Array {
  const data = new Uint8Array(10);
  data[0] = 12;
  new DataView(data.buffer).setBigUint64(1, amount, true);
  data[9] = decimals;
  return data;
}

function randomHex(bytes: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) =>
    b.toString(16).padStart(2, '0'),
  ).join('');
}

export function base64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

export function messageOf(error: unknown): string {
  if (error instanceof Error && error.message !== '') return error.message;
  if (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as { message?: unknown }).message === 'string'
  )
    return (error as { message: string }).message;
  return String(error);
}
