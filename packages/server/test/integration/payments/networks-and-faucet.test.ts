import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createSolanaRpc, address as toAddress } from '@solana/kit';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { SolanaAdapter } from '../../../src/chains/solana/solana-adapter.ts';
import { shareableUrl } from '../../../src/domain/shareable-url.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';

describe('GET /networks and POST /faucet on the embedded localnet', () => {
  let chain: TestChain;
  let gw: TestGateway;
  let key: string;

  before(async () => {
    chain = await startTestChain();
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter]) });
    ({ key } = await gw.newCaller('standard'));
  });
  after(async () => {
    await gw.close();
    await chain.close();
  });

  const faucet = (payload: Record<string, unknown>) =>
    gw.app.inject({ method: 'POST', url: '/faucet', headers: bearer(key), payload });

  it('lists the network with what a local-mode caller needs', async () => {
    const res = await gw.app.inject({ method: 'GET', url: '/networks', headers: bearer(key) });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), {
      networks: [
        {
          id: chain.localnet.network,
          family: 'solana',
          name: 'Solana Localnet (embedded)',
          nativeCurrency: { symbol: 'SOL', decimals: 9 },
          isDefault: true,
          isLocal: true,
          rpcUrl: chain.localnet.rpcUrl,
          wsUrl: chain.localnet.wsUrl,
          tokens: [{ symbol: 'USDC', address: chain.localnet.usdcMint.address, decimals: 6 }],
        },
      ],
    });
  });

  it('never shows an RPC URL that may carry an API key: null instead', async () => {
    const remote = new SolanaAdapter({
      info: {
        ...chain.adapter.info,
        isLocal: false,
        rpcUrl: 'https://mainnet.example-rpc.com/?api-key=SECRET-IN-QUERY',
        wsUrl: 'wss://mainnet.example-rpc.com/v2/SECRET-IN-PATH',
      },
      rpcUrl: chain.localnet.rpcUrl,
    });
    const other = await startTestGateway({ networks: new NetworkRegistry([remote]) });
    try {
      const caller = await other.newCaller('standard');
      const res = await other.app.inject({ method: 'GET', url: '/networks', headers: bearer(caller.key) });
      assert.equal(res.statusCode, 200);
      assert.equal(res.json().networks[0].rpcUrl, null);
      assert.equal(res.json().networks[0].wsUrl, null);
      assert.doesNotMatch(res.body, /SECRET/);
    } finally {
      await other.close();
      await remote.close();
    }
  });

  it('shares only a bare scheme://host[:port] URL', () => {
    for (const [url, shown] of [
      ['https://api.mainnet-beta.solana.com', 'https://api.mainnet-beta.solana.com'],
      ['https://mainnet.base.org/', 'https://mainnet.base.org/'],
      ['http://127.0.0.1:8899', 'http://127.0.0.1:8899'],
      ['ws://127.0.0.1:8900', 'ws://127.0.0.1:8900'],
      ['https://mainnet.infura.io/v3/0123456789abcdef', null],
      ['https://base-mainnet.g.alchemy.com/v2/key', null],
      ['https://rpc.example.com/?api-key=key', null],
      ['https://key:x@rpc.example.com', null],
      ['https://user@rpc.example.com', null],
      ['https://rpc.example.com/#key', null],
      ['not a url', null],
    ] as const) {
      assert.equal(shareableUrl(url), shown, url);
    }
  });

  it('funds an address with SOL, exactly', async () => {
    const wallet = await chain.adapter.generateKeypair();
    const res = await faucet({ address: wallet.address, amount: 2.000000001 });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.success, true);
    assert.equal(body.currency, 'SOL');
    assert.equal(body.amount, 2.000000001);
    assert.equal(body.network, chain.localnet.network);
    assert.match(body.signature, /^[1-9A-HJ-NP-Za-km-z]{64,88}$/);
    assert.equal(await chain.adapter.getBalance(wallet.address), 2_000_000_001n);
  });

  it('funds an address with the USDC-like token', async () => {
    const wallet = await chain.adapter.generateKeypair();
    const res = await faucet({
      address: wallet.address,
      amount: 12.345678,
      token: 'usdc',
      network: chain.localnet.network,
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().currency, 'USDC');
    const rpc = createSolanaRpc(chain.localnet.rpcUrl);
    const { value } = await rpc
      .getTokenAccountsByOwner(
        toAddress(wallet.address),
        { mint: toAddress(chain.localnet.usdcMint.address) },
        { encoding: 'jsonParsed' },
      )
      .send();
    const [tokenAccount] = value;
    assert.ok(tokenAccount, 'a token account was created');
    const data = tokenAccount.account.data as { parsed: { info: { tokenAmount: { amount: string } } } };
    assert.equal(data.parsed.info.tokenAmount.amount, '12345678');
  });

  it('refuses bad requests with the field and rule, and moves nothing', async () => {
    const wallet = await chain.adapter.generateKeypair();
    const cases: [Record<string, unknown>, Record<string, string>][] = [
      [{ address: wallet.address, amount: 101 }, { amount: 'must be greater than 0 and at most 100' }],
      [{ address: wallet.address, amount: 0 }, { amount: 'must be between 0 and 1000000' }],
      [{ address: wallet.address, amount: 0.0000000001 }, { amount: 'has more than 9 decimal places' }],
      [
        { address: 'not-an-address', amount: 1 },
        { address: 'must be a Solana (base58) or EVM (0x…) address' },
      ],
      [
        { address: wallet.address, amount: 1, token: 'DOGE' },
        { token: 'is not a known token on Solana Localnet (embedded); known: USDC' },
      ],
      [
        { address: wallet.address, amount: 1, network: 'solana:unknown' },
        { network: 'is not a configured network; see GET /networks' },
      ],
      [{ address: `0x${'ab'.repeat(20)}`, amount: 1 }, { address: 'no evm network is configured' }],
      // The chain refuses an account with less than its rent-exempt minimum: the request's fault (was 500).
      [
        { address: wallet.address, amount: 0.000000001 },
        {
          amount:
            'the chain refused the transfer: an address that holds nothing yet must get at least its rent-exempt minimum',
        },
      ],
    ];
    for (const [payload, details] of cases) {
      const res = await faucet(payload);
      assert.equal(res.statusCode, 400, JSON.stringify(payload));
      assert.equal(res.json().error.code, 'INVALID_PARAMETERS');
      assert.deepEqual(res.json().error.details, details, JSON.stringify(payload));
    }
    assert.equal(await chain.adapter.getBalance(wallet.address), 0n);
  });

  it('answers 403 on a network that is not local', async () => {
    const remote = new SolanaAdapter({
      info: { ...chain.adapter.info, isLocal: false, name: 'Solana Mainnet' },
      rpcUrl: chain.localnet.rpcUrl,
    });
    const other = await startTestGateway({ networks: new NetworkRegistry([remote]) });
    try {
      const caller = await other.newCaller('standard');
      const wallet = await chain.adapter.generateKeypair();
      const res = await other.app.inject({
        method: 'POST',
        url: '/faucet',
        headers: bearer(caller.key),
        payload: { address: wallet.address, amount: 1 },
      });
      assert.equal(res.statusCode, 403);
      assert.equal(
        res.json().error.message,
        'The faucet works only on local networks, not on Solana Mainnet.',
      );
      assert.equal(await chain.adapter.getBalance(wallet.address), 0n);
    } finally {
      await other.close();
      await remote.close();
    }
  });
});
