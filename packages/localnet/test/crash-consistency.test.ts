// SIGKILL at random moments of a transfer storm: after each restart every transaction a client saw
// as landed is still there with its effects, and balances are exactly what the landed
// transactions (and nothing else) made them — the per-slot commit of ledger and accounts together.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { systemTransfer } from '../src/chain/faucet.ts';
import { generateKeypairBytes } from '../src/keypair-file.ts';
import { decodeBase58, encodeBase58 } from '../src/wire/base58.ts';
import { buildLegacyTransaction, KeypairSigner } from '../src/wire/legacy-transaction.ts';
import { LAMPORTS_PER_SOL, tempDir } from './support/fixture.ts';

const ROUNDS = 5;
const FEE = 5000n;
const AIRDROP = 100n * LAMPORTS_PER_SOL;

interface Node {
  readonly child: ChildProcess;
  readonly rpcUrl: string;
}

async function start(ledger: string): Promise<Node> {
  const entry = fileURLToPath(new URL('./support/serve-localnet.ts', import.meta.url));
  // 50 ms slots: many commits during a storm, so kills fall at every point of a slot.
  const child = spawn(
    process.execPath,
    [
      '--conditions=@gate402/source',
      '--import',
      'tsx',
      entry,
      '--ledger',
      ledger,
      '--port',
      '0',
      '--slot-ms',
      '50',
      '--finalized-depth',
      '4',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let text = '';
  const rpcUrl = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const match = /JSON RPC URL: (\S+)/.exec(text);
      if (match) resolve(match[1] as string);
    });
    child.once('exit', (code) => reject(new Error(`localnet exited with ${code}: ${text}`)));
  });
  return { child, rpcUrl };
}

function kill(node: Node): Promise<void> {
  return new Promise((resolve) => {
    node.child.once('exit', () => resolve());
    node.child.kill('SIGKILL');
  });
}

async function call<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await response.json()) as { result?: T; error?: unknown };
  if (body.error !== undefined) throw new RpcError(`${method}: ${JSON.stringify(body.error)}`);
  return body.result as T;
}

class RpcError extends Error {}

type Status = { slot: number; confirmationStatus: string } | null;

async function statuses(url: string, signatures: readonly string[]): Promise<Status[]> {
  const out: Status[] = [];
  for (let i = 0; i < signatures.length; i += 256) {
    const { value } = await call<{ value: Status[] }>(url, 'getSignatureStatuses', [
      signatures.slice(i, i + 256),
      { searchTransactionHistory: true },
    ]);
    out.push(...value);
  }
  return out;
}

async function balance(url: string, address: Uint8Array): Promise<bigint> {
  const { value } = await call<{ value: number }>(url, 'getBalance', [
    encodeBase58(address),
    { commitment: 'confirmed' },
  ]);
  return BigInt(value);
}

/** getSignaturesForAddress paged with `before` to the end. */
async function allSignaturesFor(url: string, address: string): Promise<string[]> {
  const out: string[] = [];
  for (;;) {
    const page = await call<{ signature: string }[]>(url, 'getSignaturesForAddress', [
      address,
      { commitment: 'confirmed', limit: 1000, ...(out.length > 0 ? { before: out[out.length - 1] } : {}) },
    ]);
    out.push(...page.map((entry) => entry.signature));
    if (page.length < 1000) return out;
  }
}

async function waitLanded(url: string, signature: string): Promise<void> {
  for (;;) {
    if ((await statuses(url, [signature]))[0]?.confirmationStatus === 'confirmed') return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('kill -9 during a transfer storm, five times: landed means kept, balances match the ledger', async () => {
  const dir = tempDir();
  const senders = Array.from({ length: 4 }, () => new KeypairSigner(generateKeypairBytes()));
  const recipient = generateKeypairBytes().subarray(32);
  /** Every transfer ever sent: amount and sender, by signature. */
  const sent = new Map<string, { amount: bigint; sender: number }>();
  let airdropToRecipient = '';
  let node = await start(dir.path);
  try {
    // The recipient holds one SOL first, so every transfer to it leaves it rent-exempt.
    for (const address of [...senders.map((s) => s.publicKey), recipient]) {
      const lamports = address === recipient ? LAMPORTS_PER_SOL : AIRDROP;
      const signature = await call<string>(node.rpcUrl, 'requestAirdrop', [
        encodeBase58(address),
        Number(lamports),
      ]);
      await waitLanded(node.rpcUrl, signature);
      airdropToRecipient = signature;
    }
    let nextAmount = 1_000n;
    for (let round = 0; round < ROUNDS; round++) {
      const seenLanded = new Set<string>();
      const inRound: string[] = [];
      let stop = false;
      const { value } = await call<{ value: { blockhash: string } }>(node.rpcUrl, 'getLatestBlockhash');
      const blockhash = decodeBase58(value.blockhash) as Uint8Array;
      const url = node.rpcUrl;
      const sendLoop = async (lane: number) => {
        while (!stop) {
          const sender = (lane + inRound.length) % senders.length;
          const amount = nextAmount++;
          const signer = senders[sender] as KeypairSigner;
          const wire = buildLegacyTransaction(
            [signer],
            [systemTransfer(signer.publicKey, recipient, amount)],
            blockhash,
          );
          const signature = encodeBase58(wire.subarray(1, 65));
          sent.set(signature, { amount, sender });
          inRound.push(signature);
          try {
            await call(url, 'sendTransaction', [
              Buffer.from(wire).toString('base64'),
              { encoding: 'base64' },
            ]);
          } catch (error) {
            if (error instanceof RpcError) throw error;
            return; // killed: the connection broke
          }
        }
      };
      // What clients see while the storm runs: every status reported at any commitment.
      const watch = async () => {
        while (!stop) {
          try {
            const found = await statuses(url, inRound.slice());
            found.forEach((status, i) => {
              if (status) seenLanded.add(inRound[i] as string);
            });
          } catch {
            return;
          }
        }
      };
      const loops = [0, 1, 2, 3].map(sendLoop);
      const watcher = watch();
      await new Promise((resolve) => setTimeout(resolve, 150 + Math.random() * 600));
      await kill(node);
      stop = true;
      await Promise.all([...loops, watcher]);

      node = await start(dir.path);
      const all = [...sent.keys()];
      const after = await statuses(node.rpcUrl, all);
      const landed = all.filter((_, i) => after[i] !== null);
      for (const signature of seenLanded) {
        assert.ok(landed.includes(signature), `round ${round}: ${signature} was reported landed, then lost`);
      }
      assert.ok(seenLanded.size > 0, `round ${round}: the storm landed something before the kill`);
      // Balances are exactly what the landed transfers made them: nothing lost, nothing extra.
      let received = LAMPORTS_PER_SOL;
      const spent = senders.map(() => 0n);
      for (const signature of landed) {
        const { amount, sender } = sent.get(signature) as { amount: bigint; sender: number };
        received += amount;
        spent[sender] = (spent[sender] as bigint) + amount + FEE;
      }
      assert.equal(await balance(node.rpcUrl, recipient), received, `round ${round}: recipient balance`);
      for (const [i, sender] of senders.entries()) {
        assert.equal(
          await balance(node.rpcUrl, sender.publicKey),
          AIRDROP - (spent[i] as bigint),
          `round ${round}: sender ${i} balance`,
        );
      }
      // The address index holds every landed transfer (issue 32 item 3).
      const history = await allSignaturesFor(node.rpcUrl, encodeBase58(recipient));
      assert.equal(history.length, landed.length + 1, `round ${round}: no signature twice`);
      assert.deepEqual(
        new Set(history),
        new Set([...landed, airdropToRecipient]),
        `round ${round}: getSignaturesForAddress`,
      );
    }
  } finally {
    await kill(node);
    dir.remove();
  }
});
