import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Address, createPublicClient, erc20Abi, http } from 'viem';
import { ChainError } from '../../../src/chains/chain-error.ts';
import { connectEvm } from '../../../src/chains/evm/connect-evm.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { ConfigError, loadConfig } from '../../../src/config.ts';
import { tempDir } from '../../support/databases.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';

describe('GET /networks and POST /faucet with the embedded EVM chain', () => {
  let solana: TestChain;
  let evm: TestEvm;
  let gw: TestGateway;
  let key: string;

  before(async () => {
    [solana, evm] = await Promise.all([startTestChain(), startTestEvm()]);
    gw = await startTestGateway({ networks: new NetworkRegistry([solana.adapter, evm.adapter]) });
    ({ key } = await gw.newCaller('standard'));
  });
  after(async () => {
    await gw.close();
    await Promise.all([solana.close(), evm.close()]);
    evm.dispose();
  });

  const faucet = (payload: Record<string, unknown>) =>
    gw.app.inject({ method: 'POST', url: '/faucet', headers: bearer(key), payload });

  it('lists both networks, the EVM one with ETH and the USDC-like token', async () => {
    const res = await gw.app.inject({ method: 'GET', url: '/networks', headers: bearer(key) });
    assert.equal(res.statusCode, 200);
    const networks = res.json().networks as Record<string, unknown>[];
    assert.deepEqual(
      networks.map((n) => n.id),
      [solana.localnet.network, 'eip155:31337'],
    );
    assert.deepEqual(networks[1], {
      id: 'eip155:31337',
      family: 'evm',
      name: 'Anvil (embedded)',
      nativeCurrency: { symbol: 'ETH', decimals: 18 },
      isDefault: true,
      isLocal: true,
      rpcUrl: evm.anvil.rpcUrl,
      wsUrl: evm.anvil.wsUrl,
      tokens: [{ symbol: 'USDC', address: evm.usdc.address, decimals: 6 }],
      x402V1Network: null,
      x402Aliases: [],
    });
  });

  it('funds an EVM address with ETH, exactly', async () => {
    const wallet = await evm.adapter.generateKeypair();
    const res = await faucet({ address: wallet.address.toLowerCase(), amount: 0.000000000000000001 });
    assert.equal(res.statusCode, 200, res.body);
    const again = await faucet({ address: wallet.address, amount: 2.5 });
    assert.equal(again.statusCode, 200, again.body);
    const body = again.json();
    assert.equal(body.success, true);
    assert.equal(body.currency, 'ETH');
    assert.equal(body.amount, 2.5);
    assert.equal(body.network, 'eip155:31337');
    assert.match(body.signature, /^0x[0-9a-f]{64}$/);
    assert.equal(
      await evm.adapter.getBalance(wallet.address),
      2_500_000_000_000_000_001n,
      'one wei, then 2.5 ETH',
    );
    const tx = await evm.adapter.getTransaction(body.signature);
    assert.deepEqual(tx?.nativeTransfers, [
      { from: evm.operator, to: wallet.address, amount: 2_500_000_000_000_000_000n },
    ]);
  });

  it('funds an EVM address with the USDC-like token, exactly', async () => {
    const wallet = await evm.adapter.generateKeypair();
    const res = await faucet({
      address: wallet.address,
      amount: 12.345678,
      token: 'usdc',
      network: 'eip155:31337',
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().currency, 'USDC');
    const client = createPublicClient({ transport: http(evm.anvil.rpcUrl) });
    const balance = await client.readContract({
      address: evm.usdc.address as Address,
      abi: erc20Abi,
      functionName: 'balanceOf',
      args: [wallet.address as Address],
    });
    assert.equal(balance, 12_345_678n);
  });

  it('refuses amounts finer than the currency and addresses of the other family', async () => {
    const wallet = await evm.adapter.generateKeypair();
    const cases: [Record<string, unknown>, Record<string, string>][] = [
      [
        { address: wallet.address, amount: 1.0000001, token: 'USDC' },
        { amount: 'has more than 6 decimal places' },
      ],
      [
        { address: wallet.address, amount: 1, network: solana.localnet.network },
        { address: 'is not an address on Solana Localnet (embedded)' },
      ],
      // The token contract takes no ETH: its revert is the request's fault (was 500).
      [
        { address: evm.usdc.address, amount: 0.3 },
        { address: 'the chain refused the transfer: a contract address must accept ETH' },
      ],
    ];
    for (const [payload, details] of cases) {
      const res = await faucet(payload);
      assert.equal(res.statusCode, 400, JSON.stringify(payload));
      assert.deepEqual(res.json().error.details, details);
    }
    assert.equal(await evm.adapter.getBalance(wallet.address), 0n);
  });
});

describe('EVM networks from EVM_RPC_URLS', () => {
  let anvil: TestEvm;
  before(async () => {
    anvil = await startTestEvm();
  });
  after(async () => {
    await anvil.close();
    anvil.dispose();
  });

  it('reads the setting in the order written and never echoes a URL', () => {
    const config = loadConfig({
      EVM_RPC_URLS: '{"eip155:8453":"https://base.example/key123","eip155:84532":"http://127.0.0.1:9545"}',
    });
    assert.deepEqual(config.evmRpcUrls, [
      { id: 'eip155:8453', rpcUrls: ['https://base.example/key123'] },
      { id: 'eip155:84532', rpcUrls: ['http://127.0.0.1:9545'] },
    ]);
    assert.deepEqual(loadConfig({}).evmRpcUrls, []);
    assert.equal(loadConfig({}).anvilPort, 8545);
    assert.equal(loadConfig({}).anvilBlockTime, 1);
    for (const [raw, problem] of [
      ['[1]', 'EVM_RPC_URLS: must be a JSON object of CAIP-2 id → RPC URL'],
      ['{}', 'EVM_RPC_URLS: must name at least one network'],
      [
        '{"solana:abc":"https://x"}',
        'EVM_RPC_URLS: "solana:abc" is not an EVM CAIP-2 id such as eip155:8453',
      ],
      [
        '{"eip155:1":"ftp://secret@x"}',
        'EVM_RPC_URLS: the URL of eip155:1 must start with http:// or https://',
      ],
    ] as const) {
      assert.throws(
        () => loadConfig({ EVM_RPC_URLS: raw }),
        (e: unknown) => e instanceof ConfigError && e.problems[0] === problem,
      );
    }
  });

  it('connects to a configured endpoint without starting anvil, and checks its chain id', async () => {
    const dir = tempDir();
    try {
      const logs: string[] = [];
      const connection = await connectEvm(
        {
          evmRpcUrls: [{ id: 'eip155:31337', rpcUrls: [anvil.anvil.rpcUrl] }],
          anvilPort: 1,
          anvilBlockTime: 0,
          dataDir: dir.path,
          rpcTimeoutMs: 8_000,
          rpcDownMs: 2_000,
        },
        (m) => logs.push(m),
      );
      try {
        assert.equal(connection.embedded, undefined);
        assert.deepEqual(logs, []);
        const [adapter] = connection.adapters;
        assert.deepEqual(adapter?.info, {
          id: 'eip155:31337',
          family: 'evm',
          name: 'EVM chain 31337',
          nativeCurrency: { symbol: 'ETH', decimals: 18 },
          isDefault: true,
          isLocal: false,
          rpcUrl: anvil.anvil.rpcUrl,
          wsUrl: undefined,
          tokens: [],
        });
        assert.equal(adapter?.faucet, undefined);
        assert.ok((await adapter.getBlockHeight()) > 0n);
      } finally {
        await connection.close();
      }
      await assert.rejects(
        connectEvm(
          {
            evmRpcUrls: [{ id: 'eip155:8453', rpcUrls: [anvil.anvil.rpcUrl] }],
            anvilPort: 1,
            anvilBlockTime: 0,
            dataDir: dir.path,
            rpcTimeoutMs: 8_000,
            rpcDownMs: 2_000,
          },
          () => {},
        ),
        (e: unknown) =>
          e instanceof ChainError &&
          e.message === 'the RPC endpoint for eip155:8453 serves chain id 31337, not 8453',
      );
    } finally {
      dir.dispose();
    }
  });
});
