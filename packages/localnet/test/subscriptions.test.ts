// PubSub over WebSocket with @solana/kit's subscriptions client and with raw frames.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { generateKeyPairSigner, getSignatureFromTransaction } from '@solana/kit';
import WebSocket from 'ws';
import {
  fundedSigner,
  type Harness,
  LAMPORTS_PER_SOL,
  signedTransfer,
  startHarness,
  wireBase64,
} from './support/fixture.ts';

let h: Harness;
before(async () => {
  h = await startHarness({ slotMs: 0, finalizedDepth: 2 });
});
after(() => h.close());

/** A raw PubSub connection that collects every frame. */
async function socket(url: string) {
  const ws = new WebSocket(url);
  const frames: Record<string, unknown>[] = [];
  const waiters: (() => void)[] = [];
  ws.on('message', (data) => {
    frames.push(JSON.parse(data.toString()) as Record<string, unknown>);
    for (const wake of waiters.splice(0)) wake();
  });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const next = async (predicate: (frame: Record<string, unknown>) => boolean) => {
    for (;;) {
      const index = frames.findIndex(predicate);
      if (index >= 0) return frames.splice(index, 1)[0] as Record<string, unknown>;
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };
  const request = async (id: number, method: string, params: unknown[]) => {
    ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    return next((f) => f.id === id);
  };
  /** Whether a frame matching `predicate` arrives within `ms`, without taking it. */
  const arrives = async (predicate: (frame: Record<string, unknown>) => boolean, ms: number) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return frames.some(predicate);
  };
  return { ws, next, request, arrives };
}

test('signatureSubscribe (kit) notifies at confirmed, one slot after processed', async () => {
  const payer = await fundedSigner(h.localnet, 1n);
  const recipient = await generateKeyPairSigner();
  const tx = await signedTransfer(h, payer, recipient.address, LAMPORTS_PER_SOL / 2n);
  const signature = getSignatureFromTransaction(tx);
  const abort = new AbortController();
  const notifications = await h.rpcSubscriptions
    .signatureNotifications(signature, { commitment: 'confirmed' })
    .subscribe({ abortSignal: abort.signal });
  await h.rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send();
  const landedSlot = await h.rpc.getSlot({ commitment: 'processed' }).send();
  h.localnet.advanceSlots(1);
  for await (const notification of notifications) {
    assert.deepEqual(notification.value, { err: null });
    assert.equal(notification.context.slot, landedSlot);
    break;
  }
  abort.abort();
});

test('a signature subscribed after it already landed is notified at once', async () => {
  const payer = await fundedSigner(h.localnet, 1n);
  const recipient = await generateKeyPairSigner();
  const tx = await signedTransfer(h, payer, recipient.address, LAMPORTS_PER_SOL / 2n);
  const signature = await h.rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send();
  const landedSlot = Number(await h.rpc.getSlot({ commitment: 'processed' }).send());
  // Reported only once its slot is committed (at the slot's end).
  h.localnet.advanceSlots(1);
  const s = await socket(h.localnet.wsUrl);
  const ack = await s.request(1, 'signatureSubscribe', [signature, { commitment: 'processed' }]);
  assert.equal(typeof ack.result, 'number');
  const note = await s.next((f) => f.method === 'signatureNotification');
  assert.deepEqual((note.params as { result: unknown }).result, {
    context: { slot: landedSlot },
    value: { err: null },
  });
  s.ws.close();
});

test('accountSubscribe, slotSubscribe, rootSubscribe and logsSubscribe fire; unsubscribe stops them', async () => {
  const payer = await fundedSigner(h.localnet, 1n);
  const recipient = await generateKeyPairSigner();
  const s = await socket(h.localnet.wsUrl);
  const account = await s.request(1, 'accountSubscribe', [
    recipient.address,
    { commitment: 'processed', encoding: 'base64' },
  ]);
  const slot = await s.request(2, 'slotSubscribe', []);
  const root = await s.request(3, 'rootSubscribe', []);
  const logs = await s.request(4, 'logsSubscribe', [
    { mentions: [recipient.address] },
    { commitment: 'processed' },
  ]);
  const allLogs = await s.request(5, 'logsSubscribe', ['all', { commitment: 'confirmed' }]);

  const tx = await signedTransfer(h, payer, recipient.address, LAMPORTS_PER_SOL / 2n);
  const signature = await h.rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send();
  const processedSlot = Number(await h.rpc.getSlot({ commitment: 'processed' }).send());

  const accountNote = await s.next((f) => f.method === 'accountNotification');
  assert.deepEqual(accountNote.params, {
    result: {
      context: { slot: processedSlot },
      value: {
        data: ['', 'base64'],
        executable: false,
        lamports: 500_000_000,
        owner: '11111111111111111111111111111111',
        // u64::MAX as Agave writes it for rent-exempt accounts, read back through JSON.parse
        rentEpoch: Number(18446744073709551615n),
        space: 0,
      },
    },
    subscription: account.result,
  });
  // Logs say a transaction landed: they wait for the slot's commit, even at processed.
  assert.equal(await s.arrives((f) => f.method === 'logsNotification', 100), false);
  h.localnet.advanceSlots(1);
  const logsNote = await s.next(
    (f) =>
      f.method === 'logsNotification' && (f.params as { subscription: unknown }).subscription === logs.result,
  );
  assert.deepEqual((logsNote.params as { result: unknown }).result, {
    context: { slot: processedSlot },
    value: {
      err: null,
      logs: [
        'Program 11111111111111111111111111111111 invoke [1]',
        'Program 11111111111111111111111111111111 success',
      ],
      signature,
    },
  });

  const slotNote = await s.next((f) => f.method === 'slotNotification');
  assert.deepEqual(slotNote.params, {
    result: { parent: processedSlot, root: processedSlot + 1 - 2, slot: processedSlot + 1 },
    subscription: slot.result,
  });
  const rootNote = await s.next((f) => f.method === 'rootNotification');
  assert.deepEqual(rootNote.params, { result: processedSlot - 1, subscription: root.result });
  // "all" at confirmed sees every transaction of the slot (the airdrop too), in order.
  type LogsParams = {
    subscription: unknown;
    result: { context: { slot: number }; value: { signature: string } };
  };
  const confirmedLogs = await s.next(
    (f) =>
      f.method === 'logsNotification' &&
      (f.params as LogsParams).subscription === allLogs.result &&
      (f.params as LogsParams).result.value.signature === signature,
  );
  assert.equal((confirmedLogs.params as LogsParams).result.context.slot, processedSlot);

  assert.deepEqual((await s.request(6, 'slotUnsubscribe', [slot.result])).result, true);
  assert.deepEqual((await s.request(7, 'slotUnsubscribe', [slot.result])).error, {
    code: -32602,
    message: 'Invalid subscription id.',
  });
  h.localnet.advanceSlots(1);
  await s.next((f) => f.method === 'rootNotification');
  assert.equal(
    await Promise.race([
      s.next((f) => f.method === 'slotNotification').then(() => 'fired'),
      new Promise((resolve) => setTimeout(() => resolve('silent'), 100)),
    ]),
    'silent',
  );
  s.ws.close();
});

test('subscriptions are capped per connection and bad frames get JSON-RPC errors', async () => {
  const s = await socket(h.localnet.wsUrl);
  for (let i = 0; i < 1000; i++)
    s.ws.send(JSON.stringify({ jsonrpc: '2.0', id: i, method: 'slotSubscribe' }));
  const last = await s.request(1000, 'slotSubscribe', []);
  assert.deepEqual(last.error, {
    code: -32603,
    message: 'Internal Error: Subscription refused. Node subscription limit reached',
  });
  s.ws.send('not json');
  assert.deepEqual((await s.next((f) => f.id === null)).error, { code: -32700, message: 'Parse error' });
  assert.deepEqual((await s.request(2000, 'noSuchSubscribe', [])).error, {
    code: -32601,
    message: 'Method not found',
  });
  assert.deepEqual((await s.request(2001, 'signatureSubscribe', ['not-a-signature'])).error, {
    code: -32602,
    message: 'Invalid param: Invalid',
  });
  assert.deepEqual((await s.request(2002, 'logsSubscribe', [{ mentions: [] }])).error, {
    code: -32602,
    message: 'Invalid Request: Only 1 address supported',
  });
  s.ws.close();
  // The node still answers.
  assert.equal(await h.rpc.getHealth().send(), 'ok');
});

test('the RPC port also accepts PubSub upgrades', async () => {
  const s = await socket(h.localnet.rpcUrl.replace('http', 'ws'));
  assert.equal(typeof (await s.request(1, 'slotSubscribe', [])).result, 'number');
  s.ws.close();
});
