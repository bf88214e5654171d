import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startAnvil } from '../../src/anvil-process.ts';

async function rpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return ((await res.json()) as { result: unknown }).result;
}

async function answers(url: string): Promise<boolean> {
  return rpc(url, 'eth_chainId').then(
    () => true,
    () => false,
  );
}

describe('anvil launcher', () => {
  it('starts on a free port with chain id 31337 and stops', async () => {
    const anvil = await startAnvil({ port: 0 });
    assert.ok(anvil.port > 0);
    assert.equal(anvil.rpcUrl, `http://127.0.0.1:${anvil.port}`);
    assert.equal(await rpc(anvil.rpcUrl, 'eth_chainId'), '0x7a69');
    await anvil.stop();
    await anvil.stop();
    assert.equal(await answers(anvil.rpcUrl), false, 'the port is closed');
  });

  it('explains a failed start', async () => {
    const first = await startAnvil({ port: 0 });
    try {
      await assert.rejects(startAnvil({ port: first.port }), /anvil exited during start[\s\S]*in use/i);
    } finally {
      await first.stop();
    }
  });

  it('does not outlive a gateway that is killed outright', async () => {
    const script = `
      import { startAnvil } from ${JSON.stringify(fileURLToPath(new URL('../../src/anvil-process.ts', import.meta.url)))};
      const anvil = await startAnvil({ port: 0 });
      console.log(anvil.rpcUrl);
      setInterval(() => {}, 1000);
    `;
    const child = spawn(
      process.execPath,
      ['--conditions=@gate402/source', '--import', 'tsx', '--input-type=module', '-e', script],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
      child.on('exit', () => reject(new Error('the child exited first')));
    });
    assert.equal(await answers(url), true);
    child.kill('SIGKILL');
    const deadline = Date.now() + 5_000;
    while ((await answers(url)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(await answers(url), false, 'anvil stopped with the gateway');
  });

  it('mines empty blocks on a timer when asked, and transactions still at once', async () => {
    const anvil = await startAnvil({ port: 0, blockTimeSeconds: 1 });
    try {
      const start = BigInt((await rpc(anvil.rpcUrl, 'eth_blockNumber')) as string);
      await new Promise((r) => setTimeout(r, 1_300));
      assert.ok(BigInt((await rpc(anvil.rpcUrl, 'eth_blockNumber')) as string) > start);
      const [dev] = (await rpc(anvil.rpcUrl, 'eth_accounts')) as string[];
      const hash = await rpc(anvil.rpcUrl, 'eth_sendTransaction', [{ from: dev, to: dev, value: '0x1' }]);
      // Mined by the transaction, not by the 1 s timer: anvil mines it asynchronously, within milliseconds.
      let receipt: unknown = null;
      for (const deadline = Date.now() + 250; receipt === null && Date.now() < deadline; ) {
        receipt = await rpc(anvil.rpcUrl, 'eth_getTransactionReceipt', [hash]);
      }
      assert.notEqual(receipt, null, 'mined at once');
    } finally {
      await anvil.stop();
    }
  });
});
