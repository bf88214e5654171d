// Shared test helpers: a localnet on port 0, @solana/kit clients bound to it, funded signers,
// transfer transactions, and raw JSON-RPC calls for the shapes clients would hide.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AccountRole,
  type Address,
  appendTransactionMessageInstructions,
  type Base64EncodedWireTransaction,
  type Blockhash,
  createSolanaRpc,
  createSolanaRpcSubscriptions,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  type Instruction,
  type KeyPairSigner,
  lamports,
  pipe,
  type Rpc,
  type RpcSubscriptions,
  type SolanaRpcApi,
  type SolanaRpcSubscriptionsApi,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from '@solana/kit';
import { getTransferSolInstruction } from '@solana-program/system';
import { type Localnet, type LocalnetOptions, startLocalnet } from '../../src/index.ts';

export const LAMPORTS_PER_SOL = 1_000_000_000n;

export interface Harness {
  readonly localnet: Localnet;
  readonly rpc: Rpc<SolanaRpcApi>;
  readonly rpcSubscriptions: RpcSubscriptions<SolanaRpcSubscriptionsApi>;
  close(): Promise<void>;
}

/** A localnet on an ephemeral port; manual slots unless `slotMs` is given. */
export async function startHarness(options: LocalnetOptions = {}): Promise<Harness> {
  const localnet = await startLocalnet({ port: 0, slotMs: 0, finalizedDepth: 2, ...options });
  return {
    localnet,
    rpc: createSolanaRpc(localnet.rpcUrl),
    rpcSubscriptions: createSolanaRpcSubscriptions(localnet.wsUrl),
    close: () => localnet.close(),
  };
}

export function tempDir(): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), 'gate402-localnet-test-'));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** A new keypair funded by the localnet faucet (processed immediately). */
export async function fundedSigner(localnet: Localnet, sol = 10n): Promise<KeyPairSigner> {
  const signer = await generateKeyPairSigner();
  localnet.airdrop(signer.address, sol * LAMPORTS_PER_SOL);
  return signer;
}

/** A signed transaction moving `amount` lamports, with extra instructions first, on a given blockhash. */
export async function signedTransfer(
  h: Harness,
  from: KeyPairSigner,
  to: Address,
  amount: bigint,
  options: {
    extra?: Instruction[];
    reference?: Address;
    blockhash?: { blockhash: Blockhash; lastValidBlockHeight: bigint };
  } = {},
) {
  const lifetime =
    options.blockhash ?? (await h.rpc.getLatestBlockhash({ commitment: 'processed' }).send()).value;
  const transfer = getTransferSolInstruction({ source: from, destination: to, amount: lamports(amount) });
  // A read-only reference account, as gate402 adds to find a payment on chain.
  const withReference: Instruction = options.reference
    ? {
        ...transfer,
        accounts: [...transfer.accounts, { address: options.reference, role: AccountRole.READONLY }],
      }
    : transfer;
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(from, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
    (m) => appendTransactionMessageInstructions([...(options.extra ?? []), withReference], m),
  );
  return signTransactionMessageWithSigners(message);
}

export function wireBase64(
  tx: Parameters<typeof getBase64EncodedWireTransaction>[0],
): Base64EncodedWireTransaction {
  return getBase64EncodedWireTransaction(tx);
}

export interface RawResponse {
  jsonrpc?: string;
  id?: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/** One JSON-RPC call with plain fetch: the exact shapes, without a client's decoding. */
export async function rawCall(url: string, method: string, params?: unknown): Promise<RawResponse> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, ...(params === undefined ? {} : { params }) });
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  return (await response.json()) as RawResponse;
}

export async function rawBody(url: string, body: string): Promise<{ status: number; text: string }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  return { status: response.status, text: await response.text() };
}
