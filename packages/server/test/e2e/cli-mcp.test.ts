import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { NetworkRegistry } from '../../src/chains/network-registry.ts';
import { callAs } from '../support/api-caller.ts';
import { GATE402_COMMAND } from '../support/gate402-command.ts';
import { agentClient, callTool, type GateSeller, startGateSeller, toolError } from '../support/mcp-agent.ts';
import { startTestGateway, type TestGateway } from '../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../support/test-localnet.ts';

/** The environment `gate402 mcp` runs in: none of the test's storage or chains, only what an agent sets. */
function agentEnv(extra: Record<string, string>): Record<string, string> {
  const { DATABASE_URL: _d, REDIS_URL: _r, ...inherited } = process.env;
  return { ...(inherited as Record<string, string>), ...extra };
}

/**
 * `gate402 mcp` as an agent's MCP client runs it: a child process on stdio (spawned by the MCP SDK's own
 * StdioClientTransport) that talks to a gateway over HTTP with the API key of GATE402_API_KEY.
 */
describe('gate402 mcp (stdio)', () => {
  let chain: TestChain;
  let gw: TestGateway;
  let base: string;
  let seller: GateSeller;
  const buyer = { key: '', wallet: '' };

  before(async () => {
    chain = await startTestChain();
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter]) });
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
    const sellerCaller = await gw.newCaller('standard');
    const payTo = (await callAs(gw, sellerCaller.key, 'POST', '/wallets', { chain: 'solana' })).body.address;
    seller = await startGateSeller({ gatewayUrl: base, key: sellerCaller.key, payTo, price: '0.02' });
    buyer.key = (await gw.newCaller('standard')).key;
    buyer.wallet = (await callAs(gw, buyer.key, 'POST', '/wallets', { chain: 'solana' })).body.address;
    await callAs(gw, buyer.key, 'POST', '/faucet', { address: buyer.wallet, amount: 1 });
  });
  after(async () => {
    await seller?.close();
    await gw?.close();
    await chain?.close();
  });

  it('lists the tools and fetches a paid resource as the key’s account, the 402 paid from its wallet', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [...GATE402_COMMAND, 'mcp'],
      env: agentEnv({ GATE402_URL: base, GATE402_API_KEY: buyer.key }),
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk) => {
      stderr += chunk;
    });
    const client = agentClient();
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(
        tools.map((t) => t.name),
        ['fetch_paid_url', 'get_balances', 'get_spend_limits', 'list_payments', 'get_payment'],
      );
      const balances = await callTool(client, 'get_balances');
      assert.deepEqual(
        (balances.value.wallets as { address: string }[]).map((w) => w.address),
        [buyer.wallet],
      );

      const fetched = await callTool(client, 'fetch_paid_url', { url: seller.url, maxAmount: '0.02' });
      assert.equal(fetched.isError, false, JSON.stringify(fetched.value));
      assert.equal(fetched.value.status, 200);
      assert.equal(JSON.parse(String(fetched.value.body)).forecast, 'sunny');
      const payment = fetched.value.payment as { paymentId: string; amount: number };
      assert.equal(payment.amount, 0.02);

      const one = await callTool(client, 'get_payment', { paymentId: payment.paymentId });
      assert.equal(one.value.status, 'confirmed');
      assert.equal(one.value.sender, buyer.wallet);
      const listed = await callTool(client, 'list_payments', { type: 'sent' });
      assert.deepEqual(
        (listed.value.payments as { paymentId: string }[]).map((p) => p.paymentId),
        [payment.paymentId],
      );
      // On the agent's own machine a loopback seller is fine (the seller above is one); refusals are
      // still the gateway's: another account's payment id is PAYMENT_NOT_FOUND.
      const other = await gw.newCaller('standard');
      const strangerStatus = await callAs(gw, other.key, 'GET', `/payment/status/${payment.paymentId}`);
      assert.equal(strangerStatus.status, 404);
    } finally {
      await client.close();
    }
    assert.match(stderr, /serving the agent tools of http:\/\/127\.0\.0\.1:\d+ on stdio/);
    assert.ok(!stderr.includes(buyer.key), 'the key is never printed');
  });

  it('refuses a wrong key tool by tool (UNAUTHORIZED), and runs no server without one', async () => {
    const wrongKey = `${buyer.key.slice(0, -4)}0000`;
    const client = agentClient();
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [...GATE402_COMMAND, 'mcp', '--url', base],
        env: agentEnv({ GATE402_API_KEY: wrongKey }),
        stderr: 'pipe',
      }),
    );
    try {
      const refused = await callTool(client, 'get_balances');
      const error = toolError(refused);
      assert.equal(error.code, 'UNAUTHORIZED');
      assert.ok(!JSON.stringify(refused.result).includes(wrongKey), 'the key is not echoed');
    } finally {
      await client.close();
    }

    const { GATE402_API_KEY: _k, ...withoutKey } = agentEnv({ GATE402_URL: base });
    const run = spawnSync(process.execPath, [...GATE402_COMMAND, 'mcp'], {
      env: withoutKey,
      encoding: 'utf8',
      timeout: 30_000,
      input: '',
    });
    assert.equal(run.status, 2);
    assert.equal(run.stdout, '', 'stdout is the protocol’s alone');
    assert.match(run.stderr, /^gate402: set GATE402_API_KEY/);
    assert.match(run.stderr, /Usage: gate402 mcp/);
  });
});
