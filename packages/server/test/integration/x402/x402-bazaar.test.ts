import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSigner } from '@solana/kit';
import { x402Client } from '@x402/core/client';
import { HTTPFacilitatorClient } from '@x402/core/server';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { ExactEvmScheme as EvmSellerScheme } from '@x402/evm/exact/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import {
  bazaarResourceServerExtension,
  declareDiscoveryExtension,
  withBazaar,
} from '@x402/extensions/bazaar';
import { wrapFetchWithPayment } from '@x402/fetch';
import { ExactSvmScheme as SvmBuyerScheme } from '@x402/svm/exact/client';
import { ExactSvmScheme as SvmSellerScheme } from '@x402/svm/exact/server';
import express from 'express';
import type { LightMyRequestResponse } from 'fastify';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { MemoryRateLimiter } from '../../../src/ratelimit/memory-rate-limiter.ts';
import { ANONYMOUS_RATE_LIMIT } from '../../../src/services/accounts/access-policy.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { callAs } from '../../support/api-caller.ts';
import { DATABASE_URL, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import {
  evmExactRequirements,
  evmPayload,
  svmExactRequirements,
  svmPayload,
} from '../../support/x402-buyer.ts';

/** The `bazaar` outcome a facilitator answer's EXTENSION-RESPONSES header carries, if any. */
function bazaarOf(res: LightMyRequestResponse): { status: string; rejectedReason?: string } | undefined {
  const header = res.headers['extension-responses'];
  if (typeof header !== 'string') return undefined;
  return JSON.parse(Buffer.from(header, 'base64').toString('utf8')).bazaar;
}

/** A stock facilitator client for gate402, with `key` sent to the discovery endpoints too when given. */
function bazaarClient(gatewayUrl: string, key?: string) {
  const headers = key === undefined ? {} : { Authorization: `Bearer ${key}` };
  return withBazaar(
    new HTTPFacilitatorClient({
      url: `${gatewayUrl}/facilitator`,
      createAuthHeaders: async () => ({
        verify: headers,
        settle: headers,
        supported: headers,
        bazaar: headers,
      }),
    }),
  );
}

/**
 * The x402 `bazaar` discovery extension on gate402's facilitator: a stock @x402/express seller declares
 * its resources with the stock helpers (declareDiscoveryExtension + bazaarResourceServerExtension), a
 * stock @x402/fetch buyer pays through gate402, and the stock `withBazaar` client lists and searches
 * what was catalogued. On the embedded Solana localnet and anvil; SQLite, or PostgreSQL when
 * DATABASE_URL is set.
 */
describe('x402 bazaar: the discovery catalogue of the built-in facilitator', () => {
  let chain: TestChain;
  let evm: TestEvm;
  let gw: TestGateway;
  let gatewayUrl: string;
  let seller: { key: string; accountId: string; solana: string; evm: string };
  let other: { key: string; accountId: string };
  let shopUrl: string;
  let closeShop: () => Promise<void>;

  const post = (key: string, url: string, payload: object) =>
    gw.app.inject({ method: 'POST', url, headers: bearer(key), payload });
  const list = (query = '', key?: string) =>
    gw.app.inject({
      method: 'GET',
      url: `/facilitator/discovery/resources${query}`,
      headers: key === undefined ? {} : bearer(key),
    });

  /** A funded stock Solana buyer's payload for `amount` to the seller, echoing `extensions`. */
  async function solanaPayment(
    extensions: Record<string, unknown>,
    options: { amount?: string; fund?: boolean; resource?: string } = {},
  ): Promise<{ paymentPayload: PaymentPayload; paymentRequirements: PaymentRequirements }> {
    const buyer = await generateKeyPairSigner();
    if (options.fund !== false)
      await callAs(gw, seller.key, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const feePayer = gw.services.facilitator.feePayerOf(SOLANA_DEVNET_ID) ?? '';
    const paymentRequirements = svmExactRequirements(chain, {
      amount: options.amount ?? '10000',
      payTo: seller.solana,
      feePayer,
    });
    const payload = await svmPayload(chain, buyer, paymentRequirements, options.resource);
    return { paymentPayload: { ...payload, extensions }, paymentRequirements };
  }

  before(async () => {
    [chain, evm] = await Promise.all([startTestChain(), startTestEvm()]);
    const storage = DATABASE_URL === undefined ? tempSqlite() : await tempPostgres();
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter, evm.adapter]), storage });
    await gw.services.facilitator.start();
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    gatewayUrl = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
    const caller = await gw.newCaller('premium');
    seller = {
      ...caller,
      solana: (await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'solana' })).body.address,
      evm: (await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'evm' })).body.address,
    };
    await callAs(gw, seller.key, 'POST', '/faucet', { address: seller.solana, amount: 0.01, token: 'USDC' });
    other = await gw.newCaller('premium');

    // A stock seller: its resource server enriches the declared discovery info with the route's method.
    const headers = { Authorization: `Bearer ${seller.key}` };
    const server = new x402ResourceServer(
      new HTTPFacilitatorClient({
        url: `${gatewayUrl}/facilitator`,
        createAuthHeaders: async () => ({ verify: headers, settle: headers, supported: headers }),
      }),
    )
      .register(SOLANA_DEVNET_ID, new SvmSellerScheme())
      .register('eip155:31337', new EvmSellerScheme())
      .registerExtension(bazaarResourceServerExtension);
    const app = express();
    app.use(
      paymentMiddleware(
        {
          'GET /weather': {
            accepts: { scheme: 'exact', network: SOLANA_DEVNET_ID, payTo: seller.solana, price: '$0.01' },
            description: 'Weather of a city',
            mimeType: 'application/json',
            extensions: declareDiscoveryExtension({
              input: { city: 'Lisbon' },
              inputSchema: { properties: { city: { type: 'string' } }, required: ['city'] },
              output: { example: { city: 'Lisbon', sky: 'clear' } },
            }),
          },
          'POST /search': {
            accepts: {
              scheme: 'exact',
              network: 'eip155:31337',
              payTo: seller.evm,
              price: { amount: '10000', asset: evm.usdc.address, extra: { name: 'USD Coin', version: '2' } },
            },
            description: 'Search the archive',
            extensions: declareDiscoveryExtension({
              bodyType: 'json',
              input: { query: 'tides' },
              output: { example: { results: [] } },
            }),
          },
        },
        server,
      ),
    );
    app.get('/weather', (_req, res) => void res.json({ city: 'Lisbon', sky: 'clear' }));
    app.post('/search', (_req, res) => void res.json({ results: [] }));
    const listening = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => listening.once('listening', resolve));
    shopUrl = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
    closeShop = () => new Promise((resolve) => listening.close(() => resolve()));
  });

  after(async () => {
    await closeShop?.();
    await gw?.close();
    await Promise.all([chain?.close(), evm?.close()]);
    evm?.dispose();
  });

  it('advertises bazaar and payment-identifier in GET /facilitator/supported', async () => {
    const res = await gw.app.inject({
      method: 'GET',
      url: '/facilitator/supported',
      headers: bearer(seller.key),
    });
    assert.equal(res.statusCode, 200);
    for (const name of ['bazaar', 'payment-identifier'])
      assert.ok(res.json().extensions.includes(name), name);
  });

  it('catalogues what a stock seller declares once a stock buyer paid: listed and searched by the stock withBazaar client', async () => {
    const buyer = await generateKeyPairSigner();
    await callAs(gw, seller.key, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const solanaBuyer = x402Client.fromConfig({
      schemes: [
        { network: SOLANA_DEVNET_ID, client: new SvmBuyerScheme(buyer, { rpcUrl: chain.localnet.rpcUrl }) },
      ],
    });
    const paid = await wrapFetchWithPayment(fetch, solanaBuyer)(`${shopUrl}/weather?city=Lisbon`);
    assert.equal(paid.status, 200, await paid.clone().text());

    const evmBuyer = privateKeyToAccount(generatePrivateKey());
    await callAs(gw, seller.key, 'POST', '/faucet', { address: evmBuyer.address, amount: 1, token: 'USDC' });
    const { ExactEvmScheme: EvmBuyerScheme } = await import('@x402/evm/exact/client');
    const evmClient = x402Client.fromConfig({
      schemes: [{ network: 'eip155:31337', client: new EvmBuyerScheme(evmBuyer) }],
      spendControls: { allowedAssets: [{ network: 'eip155:31337', asset: evm.usdc.address }] },
    });
    const searched = await wrapFetchWithPayment(fetch, evmClient)(`${shopUrl}/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'tides' }),
    });
    assert.equal(searched.status, 200, await searched.clone().text());

    // The public view, as a stock client without a key reads it.
    const publicView = await bazaarClient(gatewayUrl).extensions.bazaar.listResources({ limit: 10 });
    assert.equal(publicView.x402Version, 2);
    assert.deepEqual(publicView.pagination, { limit: 10, offset: 0, total: 2 });
    const weather = publicView.items.find((i) => i.resource === `${shopUrl}/weather`);
    assert.ok(weather, JSON.stringify(publicView.items));
    assert.equal(weather.type, 'http');
    assert.equal(weather.x402Version, 2);
    assert.equal(weather.description, 'Weather of a city');
    assert.equal(weather.mimeType, 'application/json');
    assert.deepEqual(
      [weather.accepts[0]?.network, weather.accepts[0]?.payTo, weather.accepts[0]?.amount],
      [SOLANA_DEVNET_ID, seller.solana, '10000'],
    );
    const declared = weather.extensions?.bazaar as { info: { input: Record<string, unknown> } } | undefined;
    const info = declared?.info;
    assert.deepEqual(info?.input, { type: 'http', method: 'GET', queryParams: { city: 'Lisbon' } });
    assert.ok(!Number.isNaN(Date.parse(weather.lastUpdated)));
    const search = publicView.items.find((i) => i.resource === `${shopUrl}/search`);
    assert.equal(search?.accepts[0]?.network, 'eip155:31337');
    const searchDeclared = search?.extensions?.bazaar as { info: { input: { method: string } } } | undefined;
    assert.equal(searchDeclared?.info.input.method, 'POST');

    // Filters, as the stock client sends them.
    const mine = await bazaarClient(gatewayUrl, seller.key).extensions.bazaar.listResources({
      network: 'eip155:31337',
    });
    assert.deepEqual(
      mine.items.map((i) => i.resource),
      [`${shopUrl}/search`],
    );
    assert.equal(mine.pagination.total, 1);
    const page = await bazaarClient(gatewayUrl).extensions.bazaar.listResources({ limit: 1, offset: 1 });
    assert.equal(page.items.length, 1);
    assert.equal(page.pagination.total, 2);
    assert.equal(
      (await bazaarClient(gatewayUrl).extensions.bazaar.listResources({ type: 'mcp' })).items.length,
      0,
    );

    // Search: every word, case-insensitive.
    const found = await bazaarClient(gatewayUrl).extensions.bazaar.search({ query: 'WEATHER city' });
    assert.deepEqual(
      found.resources.map((r) => r.resource),
      [`${shopUrl}/weather`],
    );
    assert.equal(
      (await bazaarClient(gatewayUrl).extensions.bazaar.search({ query: 'nothing-like-it' })).resources
        .length,
      0,
    );

    // Per account: another account's key sees its own (empty) catalogue, not the seller's.
    const others = await bazaarClient(gatewayUrl, other.key).extensions.bazaar.listResources();
    assert.deepEqual(others.items, []);
    assert.equal(others.pagination.total, 0);
  });

  it('keeps one entry per resource and account: the latest declaration wins, whatever the query', async () => {
    const declare = () => declareDiscoveryExtension({ input: { q: 'x' }, output: { example: { ok: true } } });
    const url = 'https://dedupe.example/api/data';
    for (const [i, description] of ['first words', 'second words'].entries()) {
      const ext = declare().bazaar as { info: { input: Record<string, unknown> } };
      ext.info.input.method = 'GET';
      const { paymentPayload, paymentRequirements } = await solanaPayment({ bazaar: ext });
      const res = await post(seller.key, '/facilitator/settle', {
        paymentPayload: { ...paymentPayload, resource: { url: `${url}?q=${i}`, description } },
        paymentRequirements,
      });
      assert.equal(res.json().success, true, res.body);
      assert.deepEqual(bazaarOf(res), { status: 'success' });
    }
    const mine = (await list('?limit=100', seller.key))
      .json()
      .items.filter((i: { resource: string }) => i.resource === url);
    assert.equal(mine.length, 1);
    assert.equal(mine[0].description, 'second words');
  });

  it("lists the seller's iconUrl when it names a public host, and drops one that names this machine", async () => {
    const url = 'https://icons.example/api/data';
    const listed = async (iconUrl: string) => {
      const ext = declareDiscoveryExtension({ input: { q: 'x' } }).bazaar as {
        info: { input: Record<string, unknown> };
      };
      ext.info.input.method = 'GET';
      const { paymentPayload, paymentRequirements } = await solanaPayment({ bazaar: ext });
      const res = await post(seller.key, '/facilitator/settle', {
        paymentPayload: { ...paymentPayload, resource: { url, iconUrl } },
        paymentRequirements,
      });
      assert.equal(res.json().success, true, res.body);
      assert.deepEqual(bazaarOf(res), { status: 'success' }, 'an unsafe icon is dropped, not a rejection');
      return (await list('?limit=100', seller.key))
        .json()
        .items.find((i: { resource: string }) => i.resource === url);
    };
    assert.equal(
      (await listed('https://cdn.icons.example/logo.png')).iconUrl,
      'https://cdn.icons.example/logo.png',
    );
    assert.equal('iconUrl' in (await listed('http://169.254.169.254/latest/meta-data')), false);
  });

  it('refuses oversized or malformed declarations without failing the payment, and never lists them', async () => {
    const good = declareDiscoveryExtension({ input: { q: 'x' } }).bazaar as {
      info: { input: Record<string, unknown> };
      schema: Record<string, unknown>;
    };
    good.info.input.method = 'GET';
    const cases: [string, unknown, RegExp][] = [
      [
        'oversized',
        { ...good, info: { ...good.info, output: { type: 'json', example: { pad: 'x'.repeat(20_000) } } } },
        /at most 16384/,
      ],
      [
        'info against its own schema',
        { ...good, info: { input: { type: 'http', method: 'GET', extra: 1 } } },
        /schema validation/,
      ],
      ['no schema', { info: good.info }, /info and schema/],
      [
        'a schema that is not one',
        { ...good, schema: { type: 'object', $ref: 'https://evil.example/s.json' } },
        /JSON Schema/,
      ],
      ['a string', 'bazaar!', /info and schema/],
      [
        'an unknown input type',
        { info: { input: { type: 'ftp' } }, schema: { type: 'object' } },
        /"http" or "mcp"/,
      ],
      [
        'a body method without bodyType',
        { info: { input: { type: 'http', method: 'POST' } }, schema: { type: 'object' } },
        /bodyType/,
      ],
    ];
    for (const [what, bazaar, reason] of cases) {
      const resource = `https://malformed.example/${what.replace(/\W+/g, '-')}`;
      const { paymentPayload, paymentRequirements } = await solanaPayment({ bazaar }, { resource });
      const res = await post(seller.key, '/facilitator/settle', { paymentPayload, paymentRequirements });
      assert.equal(res.statusCode, 200, `${what}: ${res.body}`);
      assert.equal(res.json().success, true, `${what}: ${res.body}`);
      const outcome = bazaarOf(res);
      assert.equal(outcome?.status, 'rejected', what);
      assert.match(outcome?.rejectedReason ?? '', reason, what);
    }
    // A resource URL that is not http(s), or carries credentials.
    for (const url of ['ftp://files.example/x', 'https://user:pw@creds.example/x']) {
      const { paymentPayload, paymentRequirements } = await solanaPayment({ bazaar: good });
      const res = await post(seller.key, '/facilitator/settle', {
        paymentPayload: { ...paymentPayload, resource: { url } },
        paymentRequirements,
      });
      assert.equal(res.json().success, true, res.body);
      assert.equal(bazaarOf(res)?.status, 'rejected', url);
    }
    const listed = (await list('?limit=100')).json().items as { resource: string }[];
    assert.ok(!listed.some((i) => /malformed|files\.example|creds/.test(i.resource)), JSON.stringify(listed));
  });

  it('never lists a resource whose payment was only verified, or whose settle failed', async () => {
    const bazaar = declareDiscoveryExtension({ input: { q: 'x' } }).bazaar as {
      info: { input: Record<string, unknown> };
    };
    bazaar.info.input.method = 'GET';
    // Verified (free for anyone): reported as processing, not catalogued.
    const verified = await solanaPayment({ bazaar }, { resource: 'https://verified-only.example/x' });
    const res = await post(seller.key, '/facilitator/verify', verified);
    assert.equal(res.json().isValid, true, res.body);
    assert.deepEqual(bazaarOf(res), { status: 'processing' });
    // A buyer without funds: the settle fails.
    const broke = await solanaPayment({ bazaar }, { fund: false, resource: 'https://unpaid.example/x' });
    const failed = await post(seller.key, '/facilitator/settle', broke);
    assert.equal(failed.json().success, false, failed.body);
    assert.equal(bazaarOf(failed), undefined);
    // Paid to someone else than the requirements say: refused before anything is sent.
    const wrong = await solanaPayment({ bazaar }, { resource: 'https://mismatch.example/x' });
    const refused = await post(seller.key, '/facilitator/settle', {
      ...wrong,
      paymentRequirements: { ...wrong.paymentRequirements, amount: '20000' },
    });
    assert.equal(refused.json().success, false, refused.body);
    const listed = (await list('?limit=100')).json().items as { resource: string }[];
    assert.ok(!listed.some((i) => /verified-only|unpaid|mismatch/.test(i.resource)), JSON.stringify(listed));
  });

  it('answers bad listing parameters with the error body naming the field', async () => {
    for (const query of ['?limit=0', '?limit=101', '?offset=-1', '?color=red', `?type=${'x'.repeat(40)}`]) {
      const res = await list(query);
      assert.equal(res.statusCode, 400, `${query}: ${res.body}`);
      assert.equal(res.json().error.code, 'INVALID_PARAMETERS', query);
    }
    const search = await gw.app.inject({ method: 'GET', url: '/facilitator/discovery/search' });
    assert.equal(search.statusCode, 400);
    // A key that is not one is refused, not taken for the public view.
    const bad = await list('', 'g4_not_a_key');
    assert.equal(bad.statusCode, 401);
  });

  it('EVM: a declaration on an anvil payment is catalogued too (direct settle with a stock payload)', async () => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    await callAs(gw, seller.key, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const requirements = evmExactRequirements(evm, { amount: '10000', payTo: seller.evm });
    const bazaar = declareDiscoveryExtension({
      toolName: 'tide_tables',
      description: 'Tide tables',
      inputSchema: { type: 'object', properties: { port: { type: 'string' } } },
    }).bazaar;
    const payload = await evmPayload(buyer, requirements, 'https://mcp.example/mcp');
    const res = await post(seller.key, '/facilitator/settle', {
      paymentPayload: { ...payload, extensions: { bazaar } },
      paymentRequirements: requirements,
    });
    assert.equal(res.json().success, true, res.body);
    assert.deepEqual(bazaarOf(res), { status: 'success' });
    const mcp = (await list('?type=mcp', seller.key)).json().items;
    assert.equal(mcp.length, 1);
    assert.equal(mcp[0].resource, 'https://mcp.example/mcp');
    assert.equal(mcp[0].extensions.bazaar.info.input.toolName, 'tide_tables');
  });
});

describe('x402 bazaar: the operator turns the public listing off and bounds each account', () => {
  let chain: TestChain;
  let gw: TestGateway;

  before(async () => {
    chain = await startTestChain();
    gw = await startTestGateway({
      networks: new NetworkRegistry([chain.adapter]),
      discovery: { publicListing: false, maxPerAccount: 1, maxAgeMs: 86_400_000 },
    });
    await gw.services.facilitator.start();
  });
  after(async () => {
    await gw?.close();
    await chain?.close();
  });

  it("answers 401 without a key, shows each key its own account's resources only, and keeps at most the bound", async () => {
    const a = await gw.newCaller('premium');
    const b = await gw.newCaller('premium');
    const payTo = (await callAs(gw, a.key, 'POST', '/wallets', { chain: 'solana' })).body.address;
    await callAs(gw, a.key, 'POST', '/faucet', { address: payTo, amount: 0.01, token: 'USDC' });
    const bazaar = declareDiscoveryExtension({ input: { q: 'x' } }).bazaar as {
      info: { input: Record<string, unknown> };
    };
    bazaar.info.input.method = 'GET';
    const settle = async (resource: string) => {
      const buyer = await generateKeyPairSigner();
      await callAs(gw, a.key, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
      const requirements = svmExactRequirements(chain, {
        amount: '10000',
        payTo,
        feePayer: gw.services.facilitator.feePayerOf(SOLANA_DEVNET_ID) ?? '',
      });
      const payload = await svmPayload(chain, buyer, requirements, resource);
      return gw.app.inject({
        method: 'POST',
        url: '/facilitator/settle',
        headers: bearer(a.key),
        payload: {
          paymentPayload: { ...payload, extensions: { bazaar } },
          paymentRequirements: requirements,
        },
      });
    };
    const first = await settle('https://private.example/one');
    assert.deepEqual(bazaarOf(first), { status: 'success' });
    const second = await settle('https://private.example/two');
    assert.equal(second.json().success, true);
    assert.match(bazaarOf(second)?.rejectedReason ?? '', /1 resources catalogued/);
    // The same resource again is an update, which needs no room.
    assert.deepEqual(bazaarOf(await settle('https://private.example/one')), { status: 'success' });

    const anonymous = await gw.app.inject({ method: 'GET', url: '/facilitator/discovery/resources' });
    assert.equal(anonymous.statusCode, 401);
    assert.equal(anonymous.json().error.code, 'UNAUTHORIZED');
    const anonymousSearch = await gw.app.inject({
      method: 'GET',
      url: '/facilitator/discovery/search?query=private',
    });
    assert.equal(anonymousSearch.statusCode, 401);
    const own = await gw.app.inject({
      method: 'GET',
      url: '/facilitator/discovery/resources',
      headers: bearer(a.key),
    });
    assert.deepEqual(
      own.json().items.map((i: { resource: string }) => i.resource),
      ['https://private.example/one'],
    );
    const theirs = await gw.app.inject({
      method: 'GET',
      url: '/facilitator/discovery/search?query=private',
      headers: bearer(b.key),
    });
    assert.equal(theirs.statusCode, 200);
    assert.deepEqual(theirs.json().resources, []);
  });
});

describe('x402 bazaar: the public listing is rate limited per client address', () => {
  let gw: TestGateway;
  before(async () => {
    // The limiter's clock is pinned: the window cannot roll over between the requests.
    gw = await startTestGateway({ rateLimiter: new MemoryRateLimiter(() => 1_800_000_000_000) });
  });
  after(() => gw?.close());

  it('answers 60 requests a minute from one address without a key, then 429; another address and a key are counted apart', async () => {
    const anonymous = (remoteAddress: string) =>
      gw.app.inject({ method: 'GET', url: '/facilitator/discovery/resources', remoteAddress });
    for (let i = 0; i < ANONYMOUS_RATE_LIMIT; i++) {
      const res = await anonymous('192.0.2.1');
      assert.equal(res.statusCode, 200, `request ${i + 1}: ${res.body}`);
    }
    const refused = await anonymous('192.0.2.1');
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.json().error.code, 'RATE_LIMIT_EXCEEDED');
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    assert.equal((await anonymous('192.0.2.2')).statusCode, 200);
    const { key } = await gw.newCaller('premium');
    const keyed = await gw.app.inject({
      method: 'GET',
      url: '/facilitator/discovery/resources',
      headers: bearer(key),
      remoteAddress: '192.0.2.1',
    });
    assert.equal(keyed.statusCode, 200);
  });
});
