// Localnet throughput: pre-signed SOL transfers sent over the HTTP JSON-RPC with concurrency,
// signatures confirmed through WebSocket subscriptions, and the localnet's memory before and after
// 100,000 transactions. The localnet runs in a child process (its own core, as in production);
// the reference is the same kind of transfers sent in-process straight to LiteSVM in this run.
//
// Runs on its own (`node --import tsx bench/localnet.ts`) or through bench/run.ts.
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LiteSvm } from 'litesvm/dist/internal.js';
import WebSocket from 'ws';
import { systemTransfer } from '../packages/localnet/src/chain/faucet.ts';
import { startLocalnet } from '../packages/localnet/src/index.ts';
import { generateKeypairBytes } from '../packages/localnet/src/keypair-file.ts';
import { decodeBase58, encodeBase58 } from '../packages/localnet/src/wire/base58.ts';
import { buildLegacyTransaction, KeypairSigner } from '../packages/localnet/src/wire/legacy-transaction.ts';
import type { Benchmark, BenchRow } from './bench-row.ts';

const TOTAL = 100_000;
const CHUNK = 10_000; // signed with a fresh blockhash just before it is sent: 150 slots last 60 s
const CONCURRENCY = 64;
const SENDERS = 64;
const CONFIRM_BATCH = 10_000;
const SUBSCRIPTIONS_PER_SOCKET = 500;
const TIMEOUT_MS = 240_000;

type ChildMessage =
  | { type: 'ready'; rpcUrl: string; wsUrl: string }
  | { type: 'memory'; rss: number; heapUsed: number; userMicros: number; systemMicros: number };

/** The whole benchmark, bounded: after TIMEOUT_MS it rejects, and the child is stopped either way. */
const benchmark: Benchmark = async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gate402-bench-localnet-'));
  // LOCALNET_BENCH_CPU_PROF=<dir>: the localnet child writes a V8 CPU profile there when it stops.
  const profileDir = process.env.LOCALNET_BENCH_CPU_PROF;
  const profile = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  const child = fork(fileURLToPath(import.meta.url), ['--serve', dir], {
    execArgv: ['--conditions=@gate402/source', '--import', 'tsx', '--expose-gc', ...profile],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let deadline: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    deadline = setTimeout(() => reject(new Error('localnet benchmark timed out')), TIMEOUT_MS);
  });
  try {
    return await Promise.race([measure(child), timeout]);
  } finally {
    clearTimeout(deadline);
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  }
};

async function measure(child: ChildProcess): Promise<BenchRow[]> {
  const senders = Array.from({ length: SENDERS }, () => new KeypairSigner(generateKeypairBytes()));
  const recipient = generateKeypairBytes().subarray(32);

  const reference = inProcessReference(senders, recipient);
  const ready = await nextMessage(child, 'ready');
  const rpc = new RpcClient(ready.rpcUrl);
  for (const sender of senders) {
    await rpc.call('requestAirdrop', [encodeBase58(sender.publicKey), 10_000_000_000]);
  }
  // Warm up for one chunk (JIT, SQLite pages, and V8's young generation, which grows to tens of
  // MiB of RSS under sustained allocation and then stays), then measure memory from here: the
  // figure compared is growth at steady state, i.e. what 100k transactions keep.
  await sendAll(ready.rpcUrl, await signTransfers(rpc, senders, recipient, CHUNK, 1_000_000));
  const before = await memoryOf(child);

  let sent = 0;
  let elapsedMs = 0;
  let p99 = 0;
  let clientMicros = 0;
  const signatures: string[] = [];
  let amount = 1;
  for (let done = 0; done < TOTAL; done += CHUNK) {
    const txs = await signTransfers(rpc, senders, recipient, CHUNK, amount);
    amount += CHUNK;
    const clientBefore = process.cpuUsage();
    const result = await sendAll(ready.rpcUrl, txs);
    const clientUsed = process.cpuUsage(clientBefore);
    clientMicros += clientUsed.user + clientUsed.system;
    sent += result.accepted;
    for (const tx of txs) signatures.push(signatureOf(tx));
    elapsedMs += result.elapsedMs;
    // The worst chunk's p99: a conservative figure for the whole run.
    p99 = Math.max(p99, result.p99Ms);
  }
  const after = await memoryOf(child);
  const throughput = (sent / elapsedMs) * 1000;
  // Checked after the CPU and memory probes, so the check does not count as sending.
  const landed = await landedCount(rpc, signatures);

  const confirmed = await confirmThroughput(rpc, ready.rpcUrl, ready.wsUrl, senders, recipient, amount);

  const mib = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
  const flat = after.rss - before.rss < 64 * 1024 * 1024;
  const rows: BenchRow[] = [
    {
      name: `sendTransaction over HTTP, pre-signed SOL transfers, ${CONCURRENCY} in flight (${sent}/${TOTAL} accepted, ${landed} landed)`,
      value: Math.round(throughput),
      unit: 'tx/s',
      reference: { name: 'same transfers in-process to LiteSVM', value: Math.round(reference) },
      target: '>= 3000 tx/s',
      met: throughput >= 3000 && sent === TOTAL && landed === TOTAL,
    },
    { name: 'sendTransaction p99 latency (worst 10k chunk)', value: p99, unit: 'ms' },
    {
      name: 'localnet CPU time per accepted transaction, user (all threads)',
      value: Math.round((after.userMicros - before.userMicros) / Math.max(1, sent)),
      unit: 'µs',
    },
    {
      name: 'localnet CPU time per accepted transaction, system (kernel: sockets, files)',
      value: Math.round((after.systemMicros - before.systemMicros) / Math.max(1, sent)),
      unit: 'µs',
    },
    {
      name: 'load generator (this process) CPU time per request',
      value: Math.round(clientMicros / Math.max(1, sent)),
      unit: 'µs',
    },
    {
      name: `signatures confirmed through signatureSubscribe (${CONFIRM_BATCH}, commitment confirmed)`,
      value: Math.round(confirmed),
      unit: 'sig/s',
    },
    { name: 'localnet RSS before 100k transactions', value: mib(before.rss), unit: 'MiB' },
    {
      name: 'localnet RSS after 100k transactions',
      value: mib(after.rss),
      unit: 'MiB',
      reference: { name: 'RSS before', value: mib(before.rss) },
      target: 'flat: grows < 64 MiB',
      met: flat,
    },
    { name: 'localnet heap used before 100k transactions', value: mib(before.heapUsed), unit: 'MiB' },
    {
      name: 'localnet heap used after 100k transactions',
      value: mib(after.heapUsed),
      unit: 'MiB',
      reference: { name: 'heap before', value: mib(before.heapUsed) },
    },
  ];
  return rows;
}

export default benchmark;

/** The same transfers, signed ahead, sent straight to LiteSVM: the ceiling for the RPC path. */
function inProcessReference(senders: readonly KeypairSigner[], recipient: Uint8Array): number {
  const svm = new LiteSvm();
  svm.setBlockhashCheck(false);
  svm.setTransactionHistory(0n);
  for (const sender of senders) svm.airdrop(sender.publicKey, 10_000_000_000n);
  const blockhash = decodeBase58(svm.latestBlockhash()) as Uint8Array;
  const txs: Uint8Array[] = [];
  for (let i = 0; i < CHUNK; i++) {
    const sender = senders[i % senders.length] as KeypairSigner;
    txs.push(
      buildLegacyTransaction(
        [sender],
        [systemTransfer(sender.publicKey, recipient, BigInt(i + 1_000_000))],
        blockhash,
      ),
    );
  }
  const started = performance.now();
  for (const tx of txs) svm.sendLegacyTransaction(tx);
  return (txs.length / (performance.now() - started)) * 1000;
}

async function signTransfers(
  rpc: RpcClient,
  senders: readonly KeypairSigner[],
  recipient: Uint8Array,
  count: number,
  firstAmount: number,
): Promise<string[]> {
  const { value } = (await rpc.call('getLatestBlockhash', [{ commitment: 'processed' }])) as {
    value: { blockhash: string };
  };
  const blockhash = decodeBase58(value.blockhash) as Uint8Array;
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const sender = senders[i % senders.length] as KeypairSigner;
    // A distinct amount per transfer makes every transaction (and signature) unique.
    const transfer = systemTransfer(sender.publicKey, recipient, BigInt(firstAmount + i));
    out.push(Buffer.from(buildLegacyTransaction([sender], [transfer], blockhash)).toString('base64'));
  }
  return out;
}

/**
 * Sends every transaction once over CONCURRENCY keep-alive connections, one request in flight on
 * each (no pipelining). A minimal HTTP/1.1 client rather than autocannon: every request is
 * serialised before the clock starts and a response is only framed by its content-length, so the
 * load generator costs a fraction of the server's CPU time on this 2-core machine (autocannon
 * rebuilds each request and parses responses in JavaScript, ~90 µs each, which the localnet then
 * lacks). `accepted` counts answers carrying a result; `landed` is checked on chain afterwards.
 */
async function sendAll(rpcUrl: string, txs: readonly string[]) {
  const url = new URL(rpcUrl);
  const requests = txs.map((tx, id) => {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'sendTransaction',
      params: [tx, { encoding: 'base64' }],
    });
    return Buffer.from(
      `POST / HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  });
  const latencies = new Float64Array(requests.length);
  let next = 0;
  let accepted = 0;
  let failed = 0;
  const started = performance.now();
  const connections = Array.from({ length: Math.min(CONCURRENCY, requests.length) }, () =>
    runConnection(
      url,
      () => {
        if (next >= requests.length) return undefined;
        const index = next++;
        return { index, bytes: requests[index] as Buffer, sentAt: performance.now() };
      },
      (request, status, body) => {
        latencies[request.index] = performance.now() - request.sentAt;
        if (status === 200 && body.includes(RESULT_MARK)) accepted++;
        else failed++;
      },
    ),
  );
  await Promise.all(connections);
  const elapsedMs = performance.now() - started;
  latencies.sort();
  const p99Ms = Math.round(latencies[Math.floor(latencies.length * 0.99)] ?? 0);
  return { accepted, failed, p99Ms, elapsedMs };
}

const RESULT_MARK = Buffer.from('"result"');
const HEADER_END = Buffer.from('\r\n\r\n');

interface InFlight {
  readonly index: number;
  readonly bytes: Buffer;
  readonly sentAt: number;
}

/** One keep-alive connection: sends the next request each time the previous answer is complete. */
function runConnection(
  url: URL,
  take: () => InFlight | undefined,
  done: (request: InFlight, status: number, body: Buffer) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port) });
    socket.setNoDelay(true);
    let current: InFlight | undefined;
    let pending: Buffer = Buffer.alloc(0);
    const sendNext = () => {
      current = take();
      if (current) socket.write(current.bytes);
      else socket.end();
    };
    socket.once('connect', sendNext);
    socket.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      const headerEnd = pending.indexOf(HEADER_END);
      if (headerEnd < 0 || !current) return;
      const head = pending.toString('latin1', 0, headerEnd);
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1]);
      if (!Number.isInteger(length)) {
        socket.destroy(new Error(`response without content-length: ${head}`));
        return;
      }
      const bodyStart = headerEnd + HEADER_END.length;
      if (pending.length < bodyStart + length) return;
      const status = Number(head.slice(9, 12));
      done(current, status, pending.subarray(bodyStart, bodyStart + length));
      pending = pending.subarray(bodyStart + length);
      sendNext();
    });
    socket.once('error', reject);
    socket.once('close', () => resolve());
  });
}

/** How many of `signatures` landed without error, asked through getSignatureStatuses. */
async function landedCount(rpc: RpcClient, signatures: readonly string[]): Promise<number> {
  let landed = 0;
  for (let i = 0; i < signatures.length; i += 256) {
    const batch = signatures.slice(i, i + 256);
    const { value } = (await rpc.call('getSignatureStatuses', [
      batch,
      { searchTransactionHistory: true },
    ])) as {
      value: ({ err: unknown } | null)[];
    };
    landed += value.filter((status) => status !== null && status.err === null).length;
  }
  return landed;
}

function signatureOf(base64Transaction: string): string {
  return encodeBase58(Buffer.from(base64Transaction, 'base64').subarray(1, 65));
}

/** Subscribes to every signature of a batch first, then sends it; counts notifications per second. */
async function confirmThroughput(
  rpc: RpcClient,
  rpcUrl: string,
  wsUrl: string,
  senders: readonly KeypairSigner[],
  recipient: Uint8Array,
  firstAmount: number,
): Promise<number> {
  const txs = await signTransfers(rpc, senders, recipient, CONFIRM_BATCH, firstAmount);
  const signatures = txs.map(signatureOf);
  const sockets: WebSocket[] = [];
  let notified = 0;
  let allNotified: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    allNotified = resolve;
  });
  for (let i = 0; i < signatures.length; i += SUBSCRIPTIONS_PER_SOCKET) {
    const ws = new WebSocket(wsUrl);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const batch = signatures.slice(i, i + SUBSCRIPTIONS_PER_SOCKET);
    let acknowledged = 0;
    const subscribed = new Promise<void>((resolve) => {
      ws.on('message', (data) => {
        const message = JSON.parse(data.toString()) as { method?: string };
        if (message.method === 'signatureNotification') {
          if (++notified === signatures.length) allNotified();
        } else if (++acknowledged === batch.length) resolve();
      });
    });
    batch.forEach((signature, j) => {
      ws.send(
        JSON.stringify({
          jsonrpc: '2.0',
          id: j,
          method: 'signatureSubscribe',
          params: [signature, { commitment: 'confirmed' }],
        }),
      );
    });
    await subscribed;
    sockets.push(ws);
  }
  const started = performance.now();
  await sendAll(rpcUrl, txs);
  await done;
  const elapsed = performance.now() - started;
  for (const ws of sockets) ws.close();
  return (signatures.length / elapsed) * 1000;
}

class RpcClient {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  private readonly url: URL;
  private id = 0;

  constructor(url: string) {
    this.url = new URL(url);
  }

  async call(method: string, params: unknown[]): Promise<unknown> {
    const response = await this.raw(method, params);
    if (response.error) throw new Error(`${method}: ${response.error.message}`);
    return response.result;
  }

  raw(method: string, params: unknown[]): Promise<{ result?: unknown; error?: { message: string } }> {
    const body = JSON.stringify({ jsonrpc: '2.0', id: ++this.id, method, params });
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: this.url.hostname,
          port: this.url.port,
          method: 'POST',
          path: '/',
          agent: this.agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString())));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }
}

function nextMessage<T extends ChildMessage['type']>(
  child: ChildProcess,
  type: T,
): Promise<Extract<ChildMessage, { type: T }>> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: ChildMessage) => {
      if (message.type !== type) return;
      child.off('message', onMessage);
      resolve(message as Extract<ChildMessage, { type: T }>);
    };
    child.on('message', onMessage);
    child.once('exit', (code) => reject(new Error(`localnet child exited with ${code}`)));
  });
}

async function memoryOf(child: ChildProcess) {
  const reply = nextMessage(child, 'memory');
  child.send({ type: 'memory' });
  return reply;
}

/** Child side: runs the localnet and answers memory probes over IPC. */
async function serve(dir: string): Promise<void> {
  const localnet = await startLocalnet({ port: 0, ledgerDir: dir });
  process.on('message', (message: { type: string }) => {
    if (message.type !== 'memory') return;
    globalThis.gc?.();
    const { rss, heapUsed } = process.memoryUsage();
    const { user, system } = process.cpuUsage();
    process.send?.({
      type: 'memory',
      rss,
      heapUsed,
      userMicros: user,
      systemMicros: system,
    } satisfies ChildMessage);
  });
  process.once('SIGTERM', () => {
    void localnet.close().then(() => process.exit(0));
  });
  process.send?.({ type: 'ready', rpcUrl: localnet.rpcUrl, wsUrl: localnet.wsUrl } satisfies ChildMessage);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv[2] === '--serve') await serve(process.argv[3] as string);
  else for (const row of await benchmark()) console.log(row);
}
