import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSigner, getBase58Decoder } from '@solana/kit';
import { tempDir } from '../support/databases.ts';
import { startFaultProxy } from '../support/fault-proxy.ts';
import { GATE402_COMMAND } from '../support/gate402-command.ts';

const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
const ERC20_BALANCE_OF = '0x70a08231';

/** The environment of a command: only what a test sets, never the machine's chains or databases. */
function baseEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const {
    DATABASE_URL: _d,
    REDIS_URL: _r,
    SOLANA_RPC_URL: _s,
    SOLANA_WS_URL: _w,
    EVM_RPC_URLS: _e,
    ...rest
  } = process.env;
  return { ...rest, LOG_LEVEL: 'warn', GATE402_DEMO: 'false', ...extra };
}

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `gate402 …` without blocking this process, which may itself be serving a fake chain. */
function cli(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...GATE402_COMMAND, ...args], {
      env: baseEnv(env),
      stdio: 'pipe',
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function faucetJson(args: string[], env: Record<string, string>) {
  const run = await cli(['faucet', ...args, '--json'], env);
  assert.equal(run.code, 0, `gate402 faucet ${args.join(' ')} failed: ${run.stderr}${run.stdout}`);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}

/** A refusal: exit code 1 and only the error body on stdout. */
async function refusal(args: string[], env: Record<string, string>) {
  const run = await cli(['faucet', ...args, '--json'], env);
  assert.equal(run.code, 1, `expected a refusal of ${args.join(' ')}: ${run.stderr}${run.stdout}`);
  return JSON.parse(run.stdout) as { success: false; error: Record<string, unknown> };
}

/** A port nothing listens on now (and, with `pair`, the next one too, for the localnet's WebSocket). */
async function freePort(pair = false): Promise<number> {
  for (;;) {
    const port = await listenOnce(0);
    if (!pair || (await listenOnce(port + 1).catch(() => undefined)) !== undefined) return port;
  }
}

function listenOnce(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createTcpServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address() as { port: number };
      server.close(() => resolve(bound));
    });
  });
}

async function serve(env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...GATE402_COMMAND, 'serve'], {
    env: baseEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('listening on')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${output}`)));
  });
  return child;
}

async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: unknown };
  if (body.error !== undefined) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result;
}

describe('gate402 faucet', () => {
  let dir: ReturnType<typeof tempDir>;
  let server: ChildProcess;
  let env: Record<string, string>;
  let solanaUrl: string;
  let evmUrl: string;

  before(async () => {
    dir = tempDir();
    const [port, localnetPort, anvilPort] = [await freePort(), await freePort(true), await freePort()];
    env = { DATA_DIR: dir.path, LOCALNET_PORT: String(localnetPort), ANVIL_PORT: String(anvilPort) };
    solanaUrl = `http://127.0.0.1:${localnetPort}`;
    evmUrl = `http://127.0.0.1:${anvilPort}`;
    server = await serve({ ...env, PORT: String(port) });
  });

  after(async () => {
    if (server.exitCode === null) {
      const code = await new Promise<number | null>((resolve) => {
        server.on('exit', resolve);
        server.kill('SIGTERM');
      });
      assert.equal(code, 0, 'SIGTERM stops the server cleanly');
    }
    dir.dispose();
  });

  it('airdrops SOL, confirmed, in exact lamports', async () => {
    const { address } = await generateKeyPairSigner();
    const first = await faucetJson(['--to', address, '--amount', '2.5'], env);
    assert.match(String(first.network), /^solana:[1-9A-HJ-NP-Za-km-z]{32}$/);
    assert.match(String(first.signature), /^[1-9A-HJ-NP-Za-km-z]{64,88}$/);
    assert.deepEqual(
      { ...first, network: 0, signature: 0 },
      { network: 0, address, amount: 2.5, currency: 'SOL', signature: 0 },
    );
    const second = await cli(['faucet', '--to', address, '--amount', '0.000000001'], env);
    assert.equal(second.code, 0, second.stderr);
    assert.match(
      second.stdout,
      new RegExp(`^sent 0\\.000000001 SOL to ${address} on solana:\\w+\\nsignature: \\w+\\n$`),
    );
    const balance = (await rpc(solanaUrl, 'getBalance', [address, { commitment: 'confirmed' }])) as {
      value: number;
    };
    assert.equal(balance.value, 2_500_000_001);
  });

  it('mints the localnet USDC with the mint authority kept in DATA_DIR, twice to the same token account', async () => {
    const { address } = await generateKeyPairSigner();
    const first = await faucetJson(['--to', address, '--amount', '12.345678', '--token', 'USDC'], env);
    assert.equal(first.currency, 'USDC');
    assert.equal(first.amount, 12.345678);
    await faucetJson(['--to', address, '--amount', '0.000001', '--token', 'usdc'], env);

    const accounts = (await rpc(solanaUrl, 'getTokenAccountsByOwner', [
      address,
      { programId: TOKEN_PROGRAM },
      { encoding: 'jsonParsed', commitment: 'confirmed' },
    ])) as {
      value: {
        account: {
          data: { parsed: { info: { mint: string; tokenAmount: { amount: string; decimals: number } } } };
        };
      }[];
    };
    assert.equal(accounts.value.length, 1, 'one associated token account, created once');
    const info = accounts.value[0]?.account.data.parsed.info;
    assert.equal(info?.tokenAmount.amount, '12345679');
    assert.equal(info?.tokenAmount.decimals, 6);

    // The mint is the one whose authority is the key file the localnet wrote.
    const keypair = JSON.parse(readFileSync(join(dir.path, 'localnet', 'mint-authority.json'), 'utf8'));
    const authority = getBase58Decoder().decode(new Uint8Array(keypair.slice(32)));
    const mint = (await rpc(solanaUrl, 'getAccountInfo', [info?.mint, { encoding: 'jsonParsed' }])) as {
      value: { data: { parsed: { info: { mintAuthority: string; supply: string } } } };
    };
    assert.equal(mint.value.data.parsed.info.mintAuthority, authority);
  });

  it('sends ETH and mints the anvil USDC recorded in deployments.json, in exact atomic units', async () => {
    const address = `0x${randomBytes(20).toString('hex')}`;
    const eth = await faucetJson(['--to', address, '--amount', '1.5'], env);
    assert.match(String(eth.signature), /^0x[0-9a-f]{64}$/);
    assert.deepEqual(
      { ...eth, signature: 0 },
      { network: 'eip155:31337', address, amount: 1.5, currency: 'ETH', signature: 0 },
    );
    const usdc = await faucetJson(['--to', address, '--amount', '7.25', '--token', 'USDC'], env);
    assert.deepEqual(
      { ...usdc, signature: 0 },
      { network: 'eip155:31337', address, amount: 7.25, currency: 'USDC', signature: 0 },
    );

    assert.equal(
      BigInt(String(await rpc(evmUrl, 'eth_getBalance', [address, 'latest']))),
      1_500_000_000_000_000_000n,
    );
    const record = JSON.parse(readFileSync(join(dir.path, 'anvil', 'deployments.json'), 'utf8'));
    const token = record['eip155:31337'].USDC as string;
    const data = `${ERC20_BALANCE_OF}${address.slice(2).padStart(64, '0')}`;
    assert.equal(BigInt(String(await rpc(evmUrl, 'eth_call', [{ to: token, data }, 'latest']))), 7_250_000n);
  });

  it('applies the bounds and checks of POST /faucet', async () => {
    const { address } = await generateKeyPairSigner();
    const evm = `0x${randomBytes(20).toString('hex')}`;
    const cases: [string[], Record<string, string>][] = [
      [['--to', address, '--amount', '100.5'], { amount: 'must be greater than 0 and at most 100' }],
      [['--to', evm, '--amount', '0'], { amount: 'must be greater than 0 and at most 100' }],
      [['--to', address, '--amount=-1'], { amount: 'must be greater than 0 and at most 100' }],
      [
        ['--to', evm, '--amount', '1000000.5', '--token', 'USDC'],
        { amount: 'must be greater than 0 and at most 1000000' },
      ],
      [['--to', address, '--amount', '0.0000000001'], { amount: 'has more than 9 decimal places' }],
      [
        ['--to', evm, '--amount', '1.0000001', '--token', 'USDC'],
        { amount: 'has more than 6 decimal places' },
      ],
      [
        ['--to', evm, '--amount', '100.000000000000000001'],
        {
          amount:
            "100.000000000000000001 cannot be held exactly: use fewer digits (at most the currency's decimals, within the bounds)",
        },
      ],
      [['--to', address, '--amount', '1e3'], { amount: 'must be a number, e.g. 2.5' }],
      [
        ['--to', 'not-an-address', '--amount', '1'],
        { address: 'must be a Solana (base58) or EVM (0x…) address' },
      ],
      [
        ['--to', address, '--amount', '1', '--token', 'DOGE'],
        { token: 'is not a known token on Solana Localnet; known: USDC' },
      ],
      [
        ['--to', address, '--amount', '1', '--network', 'eip155:31337'],
        { address: 'is not an address on eip155:31337' },
      ],
      [
        ['--to', evm, '--amount', '1', '--network', 'eip155:8453'],
        { network: 'is not a configured network; see GET /networks' },
      ],
    ];
    const answers = await Promise.all(cases.map(([args]) => refusal(args, env)));
    answers.forEach((answer, i) => {
      const [args, details] = cases[i] as [string[], Record<string, string>];
      assert.deepEqual(answer.error.code, 'INVALID_PARAMETERS', args.join(' '));
      assert.deepEqual(answer.error.details, details, args.join(' '));
    });

    const usage = await cli(['faucet', '--to', address], env);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--amount is required/);
    const anyPort = await cli(['faucet', '--to', address, '--amount', '1'], { ...env, LOCALNET_PORT: '0' });
    assert.equal(anyPort.code, 2);
    assert.match(anyPort.stderr, /LOCALNET_PORT: is 0/);
  });

  it('refuses chains that are not the local ones, and tokens without the local mint', async () => {
    const { address } = await generateKeyPairSigner();
    const evm = `0x${randomBytes(20).toString('hex')}`;
    // A stand-in for a public cluster: the faucet knows a chain by its genesis hash, not by its URL.
    const mainnet: Server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      req.on('end', () => {
        const { id, method } = JSON.parse(body) as { id: number; method: string };
        const result = method === 'getGenesisHash' ? '5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuqCjhcrWvTv' : null;
        res.setHeader('content-type', 'application/json').end(JSON.stringify({ jsonrpc: '2.0', id, result }));
      });
    });
    await new Promise<void>((resolve) => mainnet.listen(0, '127.0.0.1', resolve));
    const empty = tempDir();
    try {
      const mainnetUrl = `http://127.0.0.1:${(mainnet.address() as { port: number }).port}`;
      const [onMainnet, tokenOnMainnet, noAuthority, noRecord, remoteEvm] = await Promise.all([
        refusal(['--to', address, '--amount', '1'], { ...env, SOLANA_RPC_URL: mainnetUrl }),
        refusal(['--to', address, '--amount', '1', '--token', 'USDC'], {
          ...env,
          SOLANA_RPC_URL: mainnetUrl,
        }),
        refusal(['--to', address, '--amount', '1', '--token', 'USDC'], { ...env, DATA_DIR: empty.path }),
        refusal(['--to', evm, '--amount', '1', '--token', 'USDC'], { ...env, DATA_DIR: empty.path }),
        refusal(['--to', evm, '--amount', '1'], {
          ...env,
          EVM_RPC_URLS: JSON.stringify({ 'eip155:31337': evmUrl }),
        }),
      ]);
      assert.deepEqual(onMainnet.error, {
        code: 'FORBIDDEN',
        message: 'The faucet works only on local networks, not on Solana Mainnet.',
      });
      assert.deepEqual(tokenOnMainnet.error, onMainnet.error);
      assert.deepEqual(noAuthority.error, {
        code: 'FORBIDDEN',
        message: `The faucet cannot mint USDC: no USDC mint authority at ${join(empty.path, 'localnet', 'mint-authority.json')} (tokens are minted only on the gateway's own localnet).`,
      });
      assert.deepEqual(noRecord.error, {
        code: 'FORBIDDEN',
        message: `The faucet cannot mint USDC: ${join(empty.path, 'anvil', 'deployments.json')} names no USDC-like token on this chain (tokens are minted only on the gateway's own anvil).`,
      });
      assert.equal(remoteEvm.error.code, 'FORBIDDEN');
      assert.match(String(remoteEvm.error.message), /EVM_RPC_URLS/);
      // Native SOL still works there: the airdrop is the chain's own faucet.
      await faucetJson(['--to', address, '--amount', '1'], { ...env, DATA_DIR: empty.path });
    } finally {
      mainnet.close();
      empty.dispose();
    }
  });

  it('says plainly that no chain runs, with exit code 1', async () => {
    const [solanaPort, anvilPort] = [await freePort(), await freePort()];
    const idle = { ...env, LOCALNET_PORT: String(solanaPort), ANVIL_PORT: String(anvilPort) };
    const { address } = await generateKeyPairSigner();
    const [solana, evm] = await Promise.all([
      cli(['faucet', '--to', address, '--amount', '1'], idle),
      refusal(['--to', `0x${randomBytes(20).toString('hex')}`, '--amount', '1'], idle),
    ]);
    assert.equal(solana.code, 1);
    assert.equal(
      solana.stderr,
      `gate402: no local Solana chain answers at http://127.0.0.1:${solanaPort} — start \`npx gate402 serve\` first\n`,
    );
    assert.deepEqual(evm.error, {
      code: 'CHAIN_UNAVAILABLE',
      message: `no local EVM chain (anvil) answers at http://127.0.0.1:${anvilPort} — start \`npx gate402 serve\` first`,
    });
  });

  it('gives up on a stalled chain within RPC_TIMEOUT_MS, and fails over to the next SOLANA_RPC_URL', async () => {
    const [stalledSolana, stalledAnvil] = await Promise.all([
      startFaultProxy(solanaUrl),
      startFaultProxy(evmUrl),
    ]);
    stalledSolana.set({ kind: 'hang' });
    stalledAnvil.set({ kind: 'hang' });
    try {
      const { address } = await generateKeyPairSigner();
      const limits = { RPC_TIMEOUT_MS: '300', RPC_DOWN_MS: '5000' };
      const started = performance.now();
      const [solana, evm, failedOver] = await Promise.all([
        refusal(['--to', address, '--amount', '1'], {
          ...env,
          ...limits,
          SOLANA_RPC_URL: stalledSolana.url,
        }),
        refusal(['--to', `0x${randomBytes(20).toString('hex')}`, '--amount', '1'], {
          ...env,
          ...limits,
          ANVIL_PORT: String(stalledAnvil.port),
        }),
        // The stalled endpoint first: every call waits for it once, then goes to the second.
        faucetJson(['--to', address, '--amount', '0.5'], {
          ...env,
          ...limits,
          SOLANA_RPC_URL: `${stalledSolana.url},${solanaUrl}`,
          SOLANA_WS_URL: solanaUrl.replace(/^http/, 'ws').replace(/:(\d+)$/, (_m, p) => `:${Number(p) + 1}`),
        }),
      ]);
      // Before the limits applied here, a stalled Solana endpoint held the command until it was killed.
      assert.ok(performance.now() - started < 15_000, `took ${Math.round(performance.now() - started)} ms`);
      assert.deepEqual(solana.error, {
        code: 'CHAIN_UNAVAILABLE',
        message: `no Solana chain (SOLANA_RPC_URL) answers at ${stalledSolana.url} — start \`npx gate402 serve\` first`,
      });
      assert.deepEqual(evm.error, {
        code: 'CHAIN_UNAVAILABLE',
        message: `no local EVM chain (anvil) answers at ${stalledAnvil.url} — start \`npx gate402 serve\` first`,
      });
      assert.equal(failedOver.address, address);
      assert.equal(failedOver.amount, 0.5);
      assert.equal(
        await rpc(solanaUrl, 'getBalance', [address, { commitment: 'confirmed' }]).then(
          (r) => (r as { value: number }).value,
        ),
        500_000_000,
      );
    } finally {
      await stalledSolana.close();
      await stalledAnvil.close();
    }
  });
});
