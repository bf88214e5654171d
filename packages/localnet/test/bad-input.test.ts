// Malformed requests get Agave's error shapes, never crash the node, and never touch the ledger.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { generateKeyPairSigner, getTransactionEncoder, signBytes } from '@solana/kit';
import { getSetComputeUnitLimitInstruction } from '@solana-program/compute-budget';
import {
  fundedSigner,
  type Harness,
  LAMPORTS_PER_SOL,
  rawBody,
  rawCall,
  signedTransfer,
  startHarness,
  wireBase64,
} from './support/fixture.ts';

let h: Harness;
let url: string;
before(async () => {
  h = await startHarness();
  url = h.localnet.rpcUrl;
});
after(() => h.close());

test('envelope errors: parse error, invalid request, unknown method, params of the wrong shape', async () => {
  assert.deepEqual(JSON.parse((await rawBody(url, '{not json')).text), {
    jsonrpc: '2.0',
    error: { code: -32700, message: 'Parse error' },
    id: null,
  });
  assert.deepEqual(JSON.parse((await rawBody(url, '{"id":1,"method":"getSlot"}')).text), {
    jsonrpc: '2.0',
    error: { code: -32600, message: 'Invalid request' },
    id: 1,
  });
  assert.deepEqual(JSON.parse((await rawBody(url, '42')).text).error, {
    code: -32600,
    message: 'Invalid request',
  });
  assert.deepEqual((await rawCall(url, 'getEverything')).error, {
    code: -32601,
    message: 'Method not found',
  });
  assert.deepEqual((await rawCall(url, 'toString')).error, { code: -32601, message: 'Method not found' });
  assert.equal((await rawCall(url, 'getBalance', { pubkey: 'x' })).error?.code, -32602);
  assert.deepEqual((await rawCall(url, 'getBalance', ['not-a-key'])).error, {
    code: -32602,
    message: 'Invalid param: Invalid',
  });
  assert.equal((await rawCall(url, 'getBalance', [])).error?.code, -32602);
  assert.equal((await rawCall(url, 'getSlot', [{ commitment: 'eventually' }])).error?.code, -32602);
  assert.deepEqual((await rawCall(url, 'getSlot', [{ minContextSlot: 1_000_000 }])).error, {
    code: -32016,
    message: 'Minimum context slot has not been reached',
    data: { contextSlot: 0 },
  });
  assert.deepEqual((await rawCall(url, 'getBlock', [999_999])).error, {
    code: -32004,
    message: 'Block not available for slot 999999',
  });
  assert.deepEqual(
    (await rawCall(url, 'getTransaction', ['1'.repeat(64), { commitment: 'processed' }])).error,
    {
      code: -32602,
      message: 'Method does not support commitment below `confirmed`',
    },
  );
  assert.deepEqual(
    (await rawCall(url, 'getSignaturesForAddress', ['11111111111111111111111111111111', { limit: 1001 }]))
      .error,
    {
      code: -32602,
      message: 'Invalid limit; max 1000',
    },
  );
});

test('batches: answered in order, notifications unanswered, empty and oversized batches refused', async () => {
  const batch = [
    { jsonrpc: '2.0', id: 1, method: 'getHealth' },
    { jsonrpc: '2.0', method: 'getHealth' },
    { jsonrpc: '2.0', id: 'b', method: 'nope' },
  ];
  assert.deepEqual(JSON.parse((await rawBody(url, JSON.stringify(batch))).text), [
    { jsonrpc: '2.0', result: 'ok', id: 1 },
    { jsonrpc: '2.0', error: { code: -32601, message: 'Method not found' }, id: 'b' },
  ]);
  assert.deepEqual(JSON.parse((await rawBody(url, '[]')).text).error, {
    code: -32600,
    message: 'Invalid request',
  });
  const big = Array.from({ length: 101 }, (_, id) => ({ jsonrpc: '2.0', id, method: 'getHealth' }));
  assert.deepEqual(JSON.parse((await rawBody(url, JSON.stringify(big))).text).error, {
    code: -32600,
    message: 'Invalid request: batch of 101 requests exceeds the limit of 100',
  });
});

test('oversized bodies are refused with 413 before they are read', async () => {
  const huge = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'getHealth',
    params: ['x'.repeat(1024 * 1024)],
  });
  const { status, text } = await rawBody(url, huge);
  assert.equal(status, 413);
  assert.deepEqual(JSON.parse(text).error, {
    code: -32600,
    message: 'Invalid request: request body exceeds 1048576 bytes',
  });
  assert.equal((await rawCall(url, 'getHealth')).result, 'ok');
});

test('bad transactions: encodings, truncation, garbage, wrong signatures, sanitize failures', async () => {
  const payer = await fundedSigner(h.localnet, 1n);
  const recipient = await generateKeyPairSigner();
  const tx = await signedTransfer(h, payer, recipient.address, LAMPORTS_PER_SOL / 2n);
  const bytes = new Uint8Array(getTransactionEncoder().encode(tx));
  const send = (data: string, config: Record<string, unknown> = { encoding: 'base64' }) =>
    rawCall(url, 'sendTransaction', [data, config]);
  const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');

  assert.deepEqual((await send('@@@not base64@@@')).error, {
    code: -32602,
    message: 'invalid base64 encoding: InvalidByte',
  });
  assert.deepEqual((await send(wireBase64(tx), { encoding: 'base32' })).error, {
    code: -32602,
    message: 'Invalid params: unknown variant `base32`, expected one of `base58`, `base64`.',
  });
  assert.deepEqual((await send(b64(bytes.subarray(0, 100)))).error, {
    code: -32602,
    message:
      'failed to deserialize solana_transaction::versioned::VersionedTransaction: io error: failed to fill whole buffer',
  });
  assert.deepEqual((await send(b64(new Uint8Array(0)))).error?.code, -32602);
  assert.deepEqual((await send(b64(new Uint8Array([1, 2, 3])))).error?.code, -32602);
  for (let seed = 0; seed < 200; seed++) {
    const junk = new Uint8Array(1 + ((seed * 37) % 400)).map((_, i) => (i * 131 + seed * 17) & 0xff);
    const response = await send(b64(junk));
    assert.ok(
      response.error && [-32602, -32002, -32003].includes(response.error.code),
      JSON.stringify(response),
    );
  }
  assert.equal((await send('A'.repeat(1648))).error?.code, -32602);
  assert.match(
    (await send('A'.repeat(1648))).error?.message ?? '',
    /too large: 1648 bytes \(max: encoded\/raw 1644\/1232\)/,
  );

  const badSignature = bytes.slice();
  badSignature[10] = (badSignature[10] as number) ^ 0xff;
  assert.deepEqual((await send(b64(badSignature))).error, {
    code: -32003,
    message: 'Transaction signature verification failure',
  });
  // A tampered message (the transfer amount; the last byte is the v0 lookup count) under the
  // original signature: same answer.
  const badMessage = bytes.slice();
  badMessage[bytes.length - 2] = (badMessage[bytes.length - 2] as number) ^ 0x01;
  assert.equal((await send(b64(badMessage))).error?.code, -32003);

  // Header claims two signers but only one signature is present.
  const sanitize = bytes.slice();
  sanitize[66] = 2; // v0 message: [1 sig count][64 sig][0x80 version][numRequiredSignatures]
  assert.deepEqual((await send(b64(sanitize))).error, {
    code: -32602,
    message: 'invalid transaction: Transaction failed to sanitize accounts offsets correctly',
  });

  // None of that moved money, and the real transaction still goes through once.
  assert.equal((await rawCall(url, 'getBalance', [recipient.address])).error, undefined);
  assert.equal(
    ((await rawCall(url, 'getBalance', [recipient.address])).result as { value: number }).value,
    0,
  );
  const sent = await send(wireBase64(tx));
  assert.equal(typeof sent.result, 'string');
  assert.equal(
    ((await rawCall(url, 'getBalance', [recipient.address])).result as { value: number }).value,
    LAMPORTS_PER_SOL / 2n > 0n ? 500_000_000 : 0,
  );
  assert.deepEqual((await send(wireBase64(tx))).error?.data, {
    accounts: null,
    err: 'AlreadyProcessed',
    innerInstructions: null,
    loadedAccountsDataSize: null,
    logs: [],
    replacementBlockhash: null,
    returnData: null,
    unitsConsumed: 0,
  });
});

test('re-signed mutations of every message byte never crash the node', async () => {
  const payer = await fundedSigner(h.localnet, 5n);
  const recipient = await generateKeyPairSigner();
  const tx = await signedTransfer(h, payer, recipient.address, 1_000_000n, {
    extra: [getSetComputeUnitLimitInstruction({ units: 50_000 })],
    reference: (await generateKeyPairSigner()).address,
  });
  const message = new Uint8Array(tx.messageBytes);
  const codes = new Set<number>();
  for (let at = 0; at < message.length; at++) {
    for (const flip of [0x01, 0x80]) {
      const mutated = message.slice();
      mutated[at] = (mutated[at] as number) ^ flip;
      // Signed by the real payer, so the mutation reaches decoding, sanitising and execution.
      const signature = new Uint8Array(await signBytes(payer.keyPair.privateKey, mutated));
      const wire = Buffer.concat([Buffer.from([1]), signature, mutated]).toString('base64');
      const response = await rawCall(url, 'sendTransaction', [
        wire,
        { encoding: 'base64', skipPreflight: at % 2 === 0 },
      ]);
      if (response.error) codes.add(response.error.code);
      else assert.equal(typeof response.result, 'string');
    }
  }
  // Only "invalid params" (undecodable/unsanitary), preflight failures and signature failures.
  for (const code of codes)
    assert.ok([-32002, -32003, -32602].includes(code), `unexpected error code ${code}`);
  assert.ok(codes.has(-32602) && codes.has(-32002), 'the mutations reached both the decoder and execution');
  assert.equal((await rawCall(url, 'getHealth')).result, 'ok');
  h.localnet.advanceSlots(1);
  assert.equal((await rawCall(url, 'getHealth')).result, 'ok');
});

test('the airdrop is bounded per request', async () => {
  const recipient = await generateKeyPairSigner();
  const limit = 1000n * LAMPORTS_PER_SOL;
  assert.deepEqual((await rawCall(url, 'requestAirdrop', [recipient.address, Number(limit) + 1])).error, {
    code: -32602,
    message: `Invalid params: airdrop must be between 1 and ${limit} lamports per request`,
  });
  assert.equal((await rawCall(url, 'requestAirdrop', [recipient.address, 0])).error?.code, -32602);
  assert.equal((await rawCall(url, 'requestAirdrop', [recipient.address, -5])).error?.code, -32602);
  assert.equal((await rawCall(url, 'requestAirdrop', [recipient.address, 1.5])).error?.code, -32602);
  assert.equal(
    typeof (await rawCall(url, 'requestAirdrop', [recipient.address, Number(limit)])).result,
    'string',
  );
});

test('non-POST requests and the health endpoint', async () => {
  assert.equal((await fetch(url, { method: 'GET' })).status, 405);
  const health = await fetch(`${url}/health`);
  assert.equal(await health.text(), 'ok');
});
