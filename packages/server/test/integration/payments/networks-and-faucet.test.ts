import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createSolanaRpc, address as toAddress } from '@solana/kit';
import { type Address, createPublicClient, erc20Abi, http } from 'viem';
import type { ChainAdapter } from '../../../src/chains/chain-adapter.ts';
import { ChainError } from '../../../src/chains/chain-error.ts';
import { connectEvm } from '../../../src/chains/evm/connect-evm.ts';
import { EvmAdapter } from '../../../src/chains/evm/evm-adapter.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { SolanaAdapter } from '../../../src/chains/solana/solana-adapter.ts';
import { ConfigError, loadConfig } from '../../../src/config.ts';
import type { NetworkInfo } from '../../../src/domain/network.ts';
import { tempDir } from '../../support/databases.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';

type Refusal = [payload: Record<string, unknown>, details: Record<string, string>];

/**
 * GET /networks and POST /faucet for one chain family's embedded chain. What the network looks like, how
 * an amount of its native currency is written, how a token balance is read straight from the chain and
 * which requests only this family can get wrong are the family's; the rules are the same.
 */
interface FaucetFamily<F> {
  readonly name: string;
  start(): Promise<F & { close(): Promise<void> }>;
  adapter(raw: F): ChainAdapter;
  /** Every network the gateway serves, the family's among them. */
  networks(raw: F): ChainAdapter[];
  /** What GET /networks says of the family's network. */
  listed(raw: F): object;
  /** An adapter for the same chain that says of itself what `info` says (a remote network, say). */
  remote(raw: F, info: Partial<NetworkInfo>): ChainAdapter;
  /** Two faucet amounts of the native currency, each as a caller writes it and in atomic units. */
  readonly native: { readonly first: [number, bigint]; readonly second: [number, bigint] };
  /** What a network of the family that is not local may be called. */
  readonly remoteName: string;
  /** How a transaction signature of the family looks. */
  readonly signature: RegExp;
  /** Another way a caller may write `address` that names the same account (EVM: lower case). */
  written(address: string): string;
  /** The account the faucet pays from, where the chain lets the test know it (anvil's operator). */
  faucetPayer(raw: F): string | undefined;
  /** The USDC-like token `owner` holds, read straight from the chain. */
  usdcBalance(raw: F, owner: string): Promise<bigint>;
  /** Bad requests only this family can get, with the details they are refused with. */
  refusals(raw: F, wallet: string): Refusal[];
}

function networksAndFaucet<F>(family: FaucetFamily<F>): void {
  describe(`GET /networks and POST /faucet on ${family.name}`, () => {
    let raw: F & { close(): Promise<void> };
    let chain: ChainAdapter;
    let gw: TestGateway;
    let key: string;

    before(async () => {
      raw = await family.start();
      chain = family.adapter(raw);
      gw = await startTestGateway({ networks: new NetworkRegistry(family.networks(raw)) });
      ({ key } = await gw.newCaller('standard'));
    });
    after(async () => {
      await gw.close();
      await raw.close();
    });

    const faucet = (payload: Record<string, unknown>) =>
      gw.app.inject({ method: 'POST', url: '/faucet', headers: bearer(key), payload });

    /** A gateway serving `adapter` alone, for one caller's request; closed after. */
    async function withGatewayOf(
      adapter: ChainAdapter,
      work: (other: TestGateway, key: string) => Promise<void>,
    ) {
      const other = await startTestGateway({ networks: new NetworkRegistry([adapter]) });
      try {
        await work(other, (await other.newCaller('standard')).key);
      } finally {
        await other.close();
        await adapter.close();
      }
    }

    it('lists the network with what a local-mode caller needs', async () => {
      const res = await gw.app.inject({ method: 'GET', url: '/networks', headers: bearer(key) });
      assert.equal(res.statusCode, 200);
      const networks = res.json().networks as { id: string }[];
      assert.deepEqual(
        networks.map((n) => n.id),
        family.networks(raw).map((n) => n.info.id),
      );
      assert.deepEqual(
        networks.find((n) => n.id === chain.info.id),
        family.listed(raw),
      );
    });

    it('never shows an RPC URL that may carry an API key: null instead', async () => {
      const remote = family.remote(raw, {
        isLocal: false,
        rpcUrl: 'https://mainnet.example-rpc.com/?api-key=SECRET-IN-QUERY',
        wsUrl: 'wss://mainnet.example-rpc.com/v2/SECRET-IN-PATH',
      });
      await withGatewayOf(remote, async (other, key) => {
        const res = await other.app.inject({ method: 'GET', url: '/networks', headers: bearer(key) });
        assert.equal(res.statusCode, 200);
        assert.equal(res.json().networks[0].rpcUrl, null);
        assert.equal(res.json().networks[0].wsUrl, null);
        assert.doesNotMatch(res.body, /SECRET/);
      });
    });

    it(`funds an address with ${family.name}'s native currency, exactly`, async () => {
      const wallet = await chain.generateKeypair();
      const [first, firstAtomic] = family.native.first;
      const [second, secondAtomic] = family.native.second;
      const res = await faucet({ address: family.written(wallet.address), amount: first });
      assert.equal(res.statusCode, 200, res.body);
      const again = await faucet({ address: wallet.address, amount: second });
      assert.equal(again.statusCode, 200, again.body);
      const body = again.json();
      assert.equal(body.success, true);
      assert.equal(body.currency, chain.info.nativeCurrency.symbol);
      assert.equal(body.amount, second);
      assert.equal(body.network, chain.info.id);
      assert.match(body.signature, family.signature);
      assert.equal(
        await chain.getBalance(wallet.address),
        firstAtomic + secondAtomic,
        'both amounts, exactly',
      );
      const tx = await chain.getTransaction(body.signature);
      assert.ok(tx, body.signature);
      assert.deepEqual(tx.nativeTransfers, [
        { from: family.faucetPayer(raw) ?? tx.feePayer, to: wallet.address, amount: secondAtomic },
      ]);
    });

    it('funds an address with the USDC-like token, exactly', async () => {
      const wallet = await chain.generateKeypair();
      const res = await faucet({
        address: wallet.address,
        amount: 12.345678,
        token: 'usdc',
        network: chain.info.id,
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().currency, 'USDC');
      assert.equal(await family.usdcBalance(raw, wallet.address), 12_345_678n);
    });

    it('refuses bad requests with the field and rule, and moves nothing', async () => {
      const wallet = await chain.generateKeypair();
      const cases: Refusal[] = [
        [{ address: wallet.address, amount: 101 }, { amount: 'must be greater than 0 and at most 100' }],
        [{ address: wallet.address, amount: 0 }, { amount: 'must be between 0 and 1000000' }],
        [
          { address: wallet.address, amount: 1.0000001, token: 'USDC' },
          { amount: 'has more than 6 decimal places' },
        ],
        [
          { address: 'not-an-address', amount: 1 },
          { address: 'must be a Solana (base58) or EVM (0x…) address' },
        ],
        [
          { address: wallet.address, amount: 1, token: 'DOGE' },
          { token: `is not a known token on ${chain.info.name}; known: USDC` },
        ],
        [
          { address: wallet.address, amount: 1, network: 'solana:unknown' },
          { network: 'is not a configured network; see GET /networks' },
        ],
        ...family.refusals(raw, wallet.address),
      ];
      for (const [payload, details] of cases) {
        const res = await faucet(payload);
        assert.equal(res.statusCode, 400, JSON.stringify(payload));
        assert.equal(res.json().error.code, 'INVALID_PARAMETERS');
        assert.deepEqual(res.json().error.details, details, JSON.stringify(payload));
      }
      assert.equal(await chain.getBalance(wallet.address), 0n);
    });

    it('answers 403 on a network that is not local', async () => {
      const remote = family.remote(raw, { isLocal: false, name: family.remoteName });
      const wallet = await chain.generateKeypair();
      await withGatewayOf(remote, async (other, key) => {
        const res = await other.app.inject({
          method: 'POST',
          url: '/faucet',
          headers: bearer(key),
          payload: { address: wallet.address, amount: 1 },
        });
        assert.equal(res.statusCode, 403);
        assert.equal(
          res.json().error.message,
          `The faucet works only on local networks, not on ${family.remoteName}.`,
        );
        assert.equal(await chain.getBalance(wallet.address), 0n);
      });
    });
  });
}

// Solana: the embedded localnet alone.
networksAndFaucet<TestChain>({
  name: 'Solana',
  start: () => startTestChain(),
  adapter: (chain) => chain.adapter,
  networks: (chain) => [chain.adapter],
  listed: (chain) => ({
    id: chain.localnet.network,
    family: 'solana',
    name: 'Solana Localnet (embedded)',
    nativeCurrency: { symbol: 'SOL', decimals: 9 },
    isDefault: true,
    isLocal: true,
    rpcUrl: chain.localnet.rpcUrl,
    wsUrl: chain.localnet.wsUrl,
    tokens: [{ symbol: 'USDC', address: chain.localnet.usdcMint.address, decimals: 6 }],
    // x402 v1 clients know it as devnet, which it answers for (X402_LOCALNET_AS_DEVNET).
    x402V1Network: 'solana-devnet',
    x402Aliases: ['solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1'],
  }),
  remote: (chain, info) =>
    new SolanaAdapter({ info: { ...chain.adapter.info, ...info }, rpcUrl: chain.localnet.rpcUrl }),
  remoteName: 'Solana Mainnet',
  native: { first: [2.000000001, 2_000_000_001n], second: [0.5, 500_000_000n] },
  signature: /^[1-9A-HJ-NP-Za-km-z]{64,88}$/,
  written: (address) => address,
  // The localnet keeps its faucet's key to itself; the faucet pays its own fee.
  faucetPayer: () => undefined,
  usdcBalance: async (chain, owner) => {
    const rpc = createSolanaRpc(chain.localnet.rpcUrl);
    const { value } = await rpc
      .getTokenAccountsByOwner(
        toAddress(owner),
        { mint: toAddress(chain.localnet.usdcMint.address) },
        { encoding: 'jsonParsed' },
      )
      .send();
    const [tokenAccount] = value;
    assert.ok(tokenAccount, 'a token account was created');
    const data = tokenAccount.account.data as { parsed: { info: { tokenAmount: { amount: string } } } };
    return BigInt(data.parsed.info.tokenAmount.amount);
  },
  refusals: (_chain, wallet) => [
    [{ address: wallet, amount: 0.0000000001 }, { amount: 'has more than 9 decimal places' }],
    [{ address: `0x${'ab'.repeat(20)}`, amount: 1 }, { address: 'no evm network is configured' }],
    // The chain refuses an account with less than its rent-exempt minimum: the request's fault (was 500).
    [
      { address: wallet, amount: 0.000000001 },
      {
        amount:
          'the chain refused the transfer: an address that holds nothing yet must get at least its rent-exempt minimum',
      },
    ],
  ],
});

// EVM: the embedded anvil beside the localnet, so an address of the other family has a network.
networksAndFaucet<{ solana: TestChain; evm: TestEvm }>({
  name: 'EVM',
  start: async () => {
    const [solana, evm] = await Promise.all([startTestChain(), startTestEvm()]);
    return {
      solana,
      evm,
      close: async () => {
        await Promise.all([solana.close(), evm.close()]);
        evm.dispose();
      },
    };
  },
  adapter: ({ evm }) => evm.adapter,
  networks: ({ solana, evm }) => [solana.adapter, evm.adapter],
  listed: ({ evm }) => ({
    id: 'eip155:31337',
    family: 'evm',
    name: 'Anvil (embedded)',
    nativeCurrency: { symbol: 'ETH', decimals: 18 },
    isDefault: true,
    isLocal: true,
    rpcUrl: evm.anvil.rpcUrl,
    wsUrl: evm.anvil.wsUrl,
    tokens: [{ symbol: 'USDC', address: evm.usdc.address, decimals: 6 }],
    // x402 v1 has no name for a local EVM chain.
    x402V1Network: null,
    x402Aliases: [],
  }),
  remote: ({ evm }, info) =>
    new EvmAdapter({ info: { ...evm.adapter.info, ...info }, rpcUrl: evm.anvil.rpcUrl, chainId: 31337 }),
  remoteName: 'Base',
  // One wei, then 2.5 ETH.
  native: { first: [0.000000000000000001, 1n], second: [2.5, 2_500_000_000_000_000_000n] },
  signature: /^0x[0-9a-f]{64}$/,
  written: (address) => address.toLowerCase(),
  faucetPayer: ({ evm }) => evm.operator,
  usdcBalance: ({ evm }, owner) =>
    createPublicClient({ transport: http(evm.anvil.rpcUrl) }).readContract({
      address: evm.usdc.address as Address,
      abi: erc20Abi,
      functionName: 'balanceOf',
      args: [owner as Address],
    }),
  refusals: ({ solana, evm }, wallet) => [
    [
      { address: wallet, amount: 1, network: solana.localnet.network },
      { address: 'is not an address on Solana Localnet (embedded)' },
    ],
    // The token contract takes no ETH: its revert is the request's fault (was 500).
    [
      { address: evm.usdc.address, amount: 0.3 },
      { address: 'the chain refused the transfer: a contract address must accept ETH' },
    ],
  ],
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
