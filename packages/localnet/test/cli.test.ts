// `runLocalnetCli`: arguments, the banner solana-test-validator users expect, usage errors.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { runLocalnetCli } from '../src/index.ts';
import { tempDir } from './support/fixture.ts';

function capture() {
  const out = new PassThrough();
  let text = '';
  out.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  return { out, text: () => text };
}

test('starts with --port 0 --ledger DIR --slot-ms 0 and prints URLs and the genesis hash', async () => {
  const dir = tempDir();
  const io = capture();
  const localnet = await runLocalnetCli(['--port', '0', '--ledger', dir.path, '--slot-ms', '0'], io.out);
  try {
    assert.ok(localnet);
    const lines = io.text().split('\n');
    assert.ok(lines.includes(`JSON RPC URL: ${localnet.rpcUrl}`));
    assert.ok(lines.includes(`WebSocket PubSub URL: ${localnet.wsUrl}`));
    assert.ok(lines.includes(`Genesis Hash: ${localnet.genesisHash}`));
    assert.ok(lines.includes(`Ledger location: ${dir.path}`));
    const response = await fetch(localnet.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getGenesisHash' }),
    });
    assert.equal(((await response.json()) as { result: string }).result, localnet.genesisHash);
  } finally {
    await localnet?.close();
    process.removeAllListeners('SIGINT');
    process.removeAllListeners('SIGTERM');
    dir.remove();
  }
});

test('--help prints usage; a bad number is a usage error with exit code 2', async () => {
  const io = capture();
  assert.equal(await runLocalnetCli(['--help'], io.out), undefined);
  assert.match(io.text(), /Usage: gate402 localnet/);
  const previous = process.exitCode;
  const stderr = process.stderr.write;
  process.stderr.write = () => true;
  try {
    assert.equal(await runLocalnetCli(['--port', 'eighty'], io.out), undefined);
    assert.equal(process.exitCode, 2);
  } finally {
    process.stderr.write = stderr;
    process.exitCode = previous;
  }
});
