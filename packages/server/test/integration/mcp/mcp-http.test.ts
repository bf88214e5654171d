import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { AGENT_FETCH_LIMITS } from '../../../src/mcp/agent-tools.ts';
import { callAs } from '../../support/api-caller.ts';
import {
  agentClient,
  callTool,
  type GateSeller,
  startGateSeller,
  toolError,
} from '../../support/mcp-agent.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';

/**
 * The gateway's own MCP endpoint (POST /mcp, streamable HTTP) with the MCP SDK's client, as an agent
 * uses it: a real gateway on the embedded Solana chain, a seller behind gate402's paywall on loopback,
 * and a buyer account whose API key is the agent's only credential.
 */
describe('MCP over streamable HTTP at /mcp', () => {
  let chain: TestChain;
  let gw: TestGateway;
  let base: string;
  let seller: GateSeller;
  let sellerWallet: string;
  const buyer = { key: '', accountId: '', wallet: '' };

  async function connect(key: string | undefined) {
    const client = agentClient();
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
        requestInit: { headers: key === undefined ? {} : { authorization: `Bearer ${key}` } },
      }),
    );
    return client;
  }

  before(async () => {
    chain = await startTestChain();
    // The seller listens on 127.0.0.1, which the SSRF guard refuses unless told otherwise.
    gw = await startTestGateway({
      networks: new NetworkRegistry([chain.adapter]),
      allowPrivateOutboundUrls: true,
    });
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;

    const sellerCaller = await gw.newCaller('standard');
    sellerWallet = (await callAs(gw, sellerCaller.key, 'POST', '/wallets', { chain: 'solana' })).body.address;
    seller = await startGateSeller({
      gatewayUrl: base,
      key: sellerCaller.key,
      payTo: sellerWallet,
      price: '0.01',
    });

    Object.assign(buyer, await gw.newCaller('standard'));
    buyer.wallet = (await callAs(gw, buyer.key, 'POST', '/wallets', { chain: 'solana' })).body.address;
    const funded = await callAs(gw, buyer.key, 'POST', '/faucet', { address: buyer.wallet, amount: 2 });
    assert.equal(funded.status, 200, JSON.stringify(funded.body));
  });
  after(async () => {
    await seller?.close();
    await gw?.close();
    await chain?.close();
  });

  it('lists the five tools with their input schemas', async () => {
    const client = await connect(buyer.key);
    try {
      assert.equal(client.getServerVersion()?.name, 'gate402');
      const { tools } = await client.listTools();
      assert.deepEqual(
        tools.map((t) => t.name),
        ['fetch_paid_url', 'get_balances', 'get_spend_limits', 'list_payments', 'get_payment'],
      );
      const fetchTool = tools.find((t) => t.name === 'fetch_paid_url');
      assert.deepEqual(fetchTool?.inputSchema.required, ['url', 'maxAmount']);
      assert.equal(fetchTool?.annotations?.readOnlyHint, false);
      assert.equal(tools.find((t) => t.name === 'get_payment')?.annotations?.readOnlyHint, true);
    } finally {
      await client.close();
    }
  });

  it('fetches a paid resource, paying its 402 once from the one wallet, then shows the payment and the balance', async () => {
    const client = await connect(buyer.key);
    try {
      const before = await callTool(client, 'get_balances');
      const [wallet] = before.value.wallets as { address: string; balance: number; watchOnly: boolean }[];
      assert.equal(wallet?.address, buyer.wallet);
      assert.equal(wallet?.balance, 2);

      // No `wallet`: the account has exactly one custodial wallet.
      const fetched = await callTool(client, 'fetch_paid_url', { url: seller.url, maxAmount: '0.05' });
      assert.equal(fetched.isError, false, JSON.stringify(fetched.value));
      assert.equal(fetched.value.status, 200);
      assert.equal(fetched.value.truncated, false);
      assert.match(String(fetched.value.contentType), /^application\/json/);
      assert.equal(JSON.parse(String(fetched.value.body)).forecast, 'sunny');
      // The body is its own text block, as sent, after the summary.
      assert.equal((fetched.result.content[1] as { text: string }).text, fetched.value.body);
      const payment = fetched.value.payment as Record<string, unknown>;
      assert.match(String(payment.paymentId), /^pay_/);
      assert.equal(payment.amount, 0.01);
      assert.equal(payment.recipient, sellerWallet);
      assert.equal(payment.status, 'confirmed');
      assert.equal((fetched.value.settlement as { success: boolean }).success, true);

      const one = await callTool(client, 'get_payment', { paymentId: payment.paymentId });
      assert.equal(one.isError, false);
      assert.equal(one.value.paymentId, payment.paymentId);
      assert.equal(one.value.amount, 0.01);
      assert.equal(one.value.sender, buyer.wallet);
      assert.equal(one.value.recipient, sellerWallet);
      assert.equal(one.value.resource, seller.url);

      const listed = await callTool(client, 'list_payments', {});
      assert.deepEqual(listed.value.wallets, [buyer.wallet]);
      const entries = listed.value.payments as { paymentId: string; type: string; wallet: string }[];
      assert.deepEqual(
        entries.map((e) => [e.paymentId, e.type, e.wallet]),
        [[payment.paymentId, 'sent', buyer.wallet]],
      );
      const received = await callTool(client, 'list_payments', { wallet: buyer.wallet, type: 'received' });
      assert.deepEqual(received.value.payments, []);

      const after = await callTool(client, 'get_balances');
      const balance = (after.value.wallets as { balance: number }[])[0]?.balance ?? 0;
      assert.ok(balance < 2 - 0.01 && balance > 2 - 0.02, `paid 0.01 and a fee: ${balance}`);
    } finally {
      await client.close();
    }
  });

  it('declines a 402 dearer than maxAmount and pays nothing', async () => {
    const client = await connect(buyer.key);
    try {
      const paidBefore = (await callAs(gw, buyer.key, 'GET', `/payment/history/${buyer.wallet}`)).body.total;
      const declined = await callTool(client, 'fetch_paid_url', {
        url: seller.url,
        wallet: buyer.wallet,
        maxAmount: '0.009',
      });
      const error = toolError(declined);
      assert.equal(error.code, 'PAYMENT_DECLINED');
      assert.match(error.message, /more than maxAmount 0\.009/);
      const paidAfter = (await callAs(gw, buyer.key, 'GET', `/payment/history/${buyer.wallet}`)).body.total;
      assert.equal(paidAfter, paidBefore);
    } finally {
      await client.close();
    }
  });

  it("answers bad arguments and the gateway's refusals as tool errors with the code and the field", async () => {
    const client = await connect(buyer.key);
    try {
      const missing = toolError(await callTool(client, 'fetch_paid_url', { url: seller.url }));
      assert.equal(missing.code, 'INVALID_PARAMETERS');
      assert.deepEqual(Object.keys(missing.details ?? {}), ['maxAmount']);
      const extra = toolError(await callTool(client, 'get_payment', { paymentId: 'pay_x', sql: '1' }));
      assert.deepEqual(extra.details, { sql: 'is not an argument of this tool' });
      // The gateway's validation, with its field: the tool passes the id on as it came.
      const malformed = toolError(await callTool(client, 'get_payment', { paymentId: 'pay_x' }));
      const direct = await callAs(gw, buyer.key, 'GET', '/payment/status/pay_x');
      assert.equal(malformed.code, direct.body.error.code);
      assert.deepEqual(malformed.details, direct.body.error.details);
      // Another account's wallet: the gateway's own answer, not a tool's guess.
      const other = await gw.newCaller('standard');
      const othersWallet = (await callAs(gw, other.key, 'POST', '/wallets', { chain: 'solana' })).body
        .address;
      await callAs(gw, other.key, 'POST', '/faucet', { address: othersWallet, amount: 1 });
      const notMine = toolError(
        await callTool(client, 'fetch_paid_url', {
          url: seller.url,
          wallet: othersWallet,
          maxAmount: '0.05',
        }),
      );
      assert.equal(notMine.code, 'FORBIDDEN');
      assert.equal(
        (await callAs(gw, other.key, 'GET', `/payment/history/${othersWallet}`)).body.total,
        0,
        'nothing was paid from it',
      );
      await assert.rejects(
        client.callTool({ name: 'drop_tables', arguments: {} }),
        /Unknown tool: drop_tables/,
      );
    } finally {
      await client.close();
    }
  });

  it("does not show another account's payment to its key: PAYMENT_NOT_FOUND, as GET /payment/status answers", async () => {
    const owner = await connect(buyer.key);
    const other = await gw.newCaller('standard');
    const stranger = await connect(other.key);
    try {
      const listed = await callTool(owner, 'list_payments', { wallet: buyer.wallet });
      const paymentId = (listed.value.payments as { paymentId: string }[])[0]?.paymentId;
      assert.ok(paymentId);
      const seen = await callTool(stranger, 'get_payment', { paymentId });
      assert.equal(toolError(seen).code, 'PAYMENT_NOT_FOUND');
      const direct = await callAs(gw, other.key, 'GET', `/payment/status/${paymentId}`);
      assert.equal(direct.status, 404);
      assert.equal(direct.body.error.code, 'PAYMENT_NOT_FOUND');
      assert.ok(!JSON.stringify(seen.value).includes(buyer.wallet), 'nothing of the payment leaks');
      const history = toolError(await callTool(stranger, 'list_payments', { wallet: buyer.wallet }));
      assert.equal(history.code, 'FORBIDDEN');
      const balances = await callTool(stranger, 'get_balances');
      assert.deepEqual(balances.value.wallets, []);
    } finally {
      await owner.close();
      await stranger.close();
    }
  });

  it("pays only within the spend policy the account's owner set, which get_spend_limits shows the agent", async () => {
    const agent = await gw.newCaller('standard');
    const wallet = (await callAs(gw, agent.key, 'POST', '/wallets', { chain: 'solana' })).body.address;
    await callAs(gw, agent.key, 'POST', '/faucet', { address: wallet, amount: 1 });
    // The owner's admin key sets it; the agent's own key could not lift it.
    const admin = await gw.accounts.createKey(agent.accountId, 'owner', ['admin']);
    const network = chain.adapter.info.id;
    const putPolicy = (key: string, payload: object) =>
      gw.app
        .inject({ method: 'PUT', url: '/spend-policies/account', headers: bearer(key), payload })
        .then((res) => ({ status: res.statusCode, body: res.json() }));
    const set = await putPolicy(admin.key, { limits: [{ network, maxPerPayment: '0.005' }] });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const client = await connect(agent.key);
    try {
      const limits = await callTool(client, 'get_spend_limits');
      assert.equal(limits.isError, false, JSON.stringify(limits.value));
      assert.match(JSON.stringify(limits.value), /"maxPerPayment":"0\.005"/);
      const refused = toolError(
        await callTool(client, 'fetch_paid_url', { url: seller.url, maxAmount: '0.05' }),
      );
      assert.equal(refused.code, 'SPEND_LIMIT_EXCEEDED', refused.message);
      const history = await callAs(gw, agent.key, 'GET', `/payment/history/${wallet}`);
      assert.equal(history.body.total, 0, 'nothing was paid');
      const lift = await putPolicy(agent.key, { limits: null });
      assert.equal(lift.status, 403, 'an ordinary key cannot lift its own limits');
    } finally {
      await client.close();
    }
  });

  it('refuses /mcp without a key or with a wrong one (401, as every route), and never echoes the key', async () => {
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    const wrongKey = `${buyer.key.slice(0, -4)}0000`;
    for (const headers of [{}, { authorization: `Bearer ${wrongKey}` }, { authorization: 'Basic abc' }]) {
      const res = await fetch(`${base}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
        body: JSON.stringify(initialize),
      });
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="gate402"');
      const text = await res.text();
      assert.equal(JSON.parse(text).error.code, 'UNAUTHORIZED');
      assert.ok(!text.includes(wrongKey));
    }
    await assert.rejects(connect(undefined));
    await assert.rejects(connect(wrongKey));
  });

  it('answers GET and DELETE with 405 (stateless endpoint), behind the same door', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${base}/mcp`, {
        method,
        headers: { authorization: `Bearer ${buyer.key}`, accept: 'text/event-stream' },
      });
      assert.equal(res.status, 405, method);
      assert.equal(res.headers.get('allow'), 'POST');
      const refused = await fetch(`${base}/mcp`, { method });
      assert.equal(refused.status, 401, method);
    }
  });

  it('answers malformed MCP requests with 4xx, never a 500', async () => {
    const post = (body: string, contentType = 'application/json') =>
      fetch(`${base}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${buyer.key}`,
          'content-type': contentType,
          accept: 'application/json, text/event-stream',
        },
        body,
      });
    const broken = await post('{"jsonrpc":');
    assert.equal(broken.status, 400);
    assert.equal(((await broken.json()) as { error: { code: string } }).error.code, 'INVALID_PARAMETERS');
    const notJsonRpc = await post('{"hello":"world"}');
    assert.equal(notJsonRpc.status, 400);
    assert.equal(((await notJsonRpc.json()) as { jsonrpc: string }).jsonrpc, '2.0');
    const text = await post('tools/list', 'text/plain');
    assert.equal(text.status, 415);
    const notAccepting = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${buyer.key}`,
        'content-type': 'application/json',
        accept: 'text/html',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(notAccepting.status, 406);
  });

  it("counts /mcp and each API request a tool makes against the key's rate limit", async () => {
    const limited = await gw.newCaller('enterprise', 10);
    const client = await connect(limited.key);
    const outcomes: string[] = [];
    try {
      for (let i = 0; i < 10; i++) {
        try {
          const result = await callTool(client, 'get_balances');
          outcomes.push(result.isError ? toolError(result).code : 'ok');
        } catch (error) {
          // The transport's error carries the door's answer, the gateway's error body.
          outcomes.push(/"code":"RATE_LIMIT_EXCEEDED"/.test(String(error)) ? 'HTTP 429' : String(error));
        }
      }
    } finally {
      await client.close();
    }
    // Connecting took two requests or more (initialize, initialized); each call takes two (/mcp, /wallets).
    const served = outcomes.filter((o) => o === 'ok').length;
    assert.ok(served >= 1 && served <= 4, outcomes.join(', '));
    assert.equal(outcomes.length, 10);
    const refused = outcomes.slice(served);
    assert.ok(
      refused.every((o) => o === 'RATE_LIMIT_EXCEEDED' || o === 'HTTP 429'),
      outcomes.join(', '),
    );
    assert.ok(refused.includes('HTTP 429'), 'the /mcp door itself refuses once the limit is spent');
  });

  it('a seller that takes the payment and answers 402 again: paid once, and the agent is told so', async () => {
    const { createServer } = await import('node:http');
    let requests = 0;
    let proofs = 0;
    const greedy = createServer((req, res) => {
      requests++;
      if (req.headers['payment-signature'] !== undefined) proofs++;
      const url = `http://${req.headers.host}${req.url}`;
      const challenge = {
        x402Version: 2,
        error: 'payment required',
        resource: { url },
        accepts: [
          {
            scheme: 'gate402-native',
            network: chain.adapter.info.id,
            asset: 'native',
            amount: '10000000',
            payTo: sellerWallet,
            maxTimeoutSeconds: 60,
          },
        ],
      };
      res.writeHead(402, {
        'payment-required': Buffer.from(JSON.stringify(challenge)).toString('base64'),
        'content-type': 'text/plain',
      });
      res.end('pay again');
    });
    await new Promise<void>((resolve) => greedy.listen(0, '127.0.0.1', resolve));
    const client = await connect(buyer.key);
    try {
      const before = (await callAs(gw, buyer.key, 'GET', `/payment/history/${buyer.wallet}?type=sent`)).body
        .total;
      const url = `http://127.0.0.1:${(greedy.address() as AddressInfo).port}/thing`;
      const fetched = await callTool(client, 'fetch_paid_url', {
        url,
        wallet: buyer.wallet,
        maxAmount: '0.05',
      });
      assert.equal(fetched.isError, false, JSON.stringify(fetched.value));
      assert.equal(fetched.value.status, 402);
      assert.equal(fetched.value.body, 'pay again');
      const payment = fetched.value.payment as { paymentId: string; amount: number };
      assert.equal(payment.amount, 0.01, 'the payment made is reported');
      assert.equal(fetched.value.offers, undefined);
      assert.deepEqual([requests, proofs], [2, 1], 'one request, one paid retry: never paid twice');
      const after = (await callAs(gw, buyer.key, 'GET', `/payment/history/${buyer.wallet}?type=sent`)).body
        .total;
      assert.equal(after, before + 1);
    } finally {
      await client.close();
      await new Promise((resolve) => greedy.close(resolve));
    }
  });

  it('cuts a large text body to the limit and says so', async () => {
    const big = 'x'.repeat(AGENT_FETCH_LIMITS.maxBodyBytes + 5000);
    const { createServer } = await import('node:http');
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(big);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = await connect(buyer.key);
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/big`;
      const fetched = await callTool(client, 'fetch_paid_url', {
        url,
        wallet: buyer.wallet,
        maxAmount: '0.01',
      });
      assert.equal(fetched.value.status, 200);
      assert.equal(fetched.value.truncated, true);
      assert.equal(fetched.value.bodyBytes, AGENT_FETCH_LIMITS.maxBodyBytes);
      assert.equal(String(fetched.value.body).length, AGENT_FETCH_LIMITS.maxBodyBytes);
      assert.match(String(fetched.value.note), /longer than/);
      assert.equal(fetched.value.payment, null);
    } finally {
      await client.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('MCP fetch_paid_url on a gateway that keeps outbound calls to public addresses', () => {
  let gw: TestGateway;
  let base: string;

  before(async () => {
    gw = await startTestGateway();
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await gw?.close();
  });

  it('refuses private, loopback and link-local URLs (the SSRF guard) before any request or payment', async () => {
    const { key } = await gw.newCaller('standard');
    const client = agentClient();
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${key}` } },
      }),
    );
    try {
      const wallet = 'So11111111111111111111111111111111111111112';
      for (const url of [
        `${base}/account`,
        'http://169.254.169.254/latest/meta-data/',
        'https://10.0.0.1/',
        'https://[::1]/',
        'https://localhost/',
      ]) {
        const refused = toolError(
          await callTool(client, 'fetch_paid_url', { url, wallet, maxAmount: '0.01' }),
        );
        assert.equal(refused.code, 'INVALID_PARAMETERS', url);
        assert.ok(refused.details?.url !== undefined, url);
      }
    } finally {
      await client.close();
    }
  });
});
