// `gate402 localnet`: starts the localnet in the foreground and prints where it listens, like
// solana-test-validator. Ctrl-C (or SIGTERM) flushes the ledger and exits.
import { parseArgs } from 'node:util';
import { type Localnet, startLocalnet } from './localnet.ts';

const USAGE = `Usage: gate402 localnet [options]

  --ledger DIR            keep accounts, ledger and keys in DIR (default: in memory)
  --port N                JSON-RPC port (default 8899; 0 = any free port)
  --ws-port N             WebSocket PubSub port (default port + 1)
  --host ADDR             interface to bind (default 127.0.0.1)
  --slot-ms N             slot length in ms (default 400; 0 = manual)
  --finalized-depth N     slots until finalized (default 32)
  -h, --help              show this help
`;

function count(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`--${name} needs a non-negative integer, got "${value}"`);
  return n;
}

/**
 * Runs the localnet from command-line arguments; resolves with the running localnet, or
 * undefined after printing help or a usage error (then `process.exitCode` is 2).
 */
export async function runLocalnetCli(
  argv: readonly string[],
  out: NodeJS.WritableStream = process.stdout,
): Promise<Localnet | undefined> {
  let options: Parameters<typeof startLocalnet>[0];
  try {
    const { values } = parseArgs({
      args: [...argv],
      options: {
        ledger: { type: 'string' },
        port: { type: 'string' },
        'ws-port': { type: 'string' },
        host: { type: 'string' },
        'slot-ms': { type: 'string' },
        'finalized-depth': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    });
    if (values.help) {
      out.write(USAGE);
      return undefined;
    }
    const entries = {
      ledgerDir: values.ledger,
      host: values.host,
      port: count(values.port, 'port'),
      wsPort: count(values['ws-port'], 'ws-port'),
      slotMs: count(values['slot-ms'], 'slot-ms'),
      finalizedDepth: count(values['finalized-depth'], 'finalized-depth'),
    };
    options = Object.fromEntries(Object.entries(entries).filter(([, v]) => v !== undefined));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${USAGE}`);
    process.exitCode = 2;
    return undefined;
  }
  const localnet = await startLocalnet(options);
  out.write(
    [
      `Ledger location: ${options?.ledgerDir ?? '(in memory)'}`,
      `Genesis Hash: ${localnet.genesisHash}`,
      `Network: ${localnet.network}`,
      `JSON RPC URL: ${localnet.rpcUrl}`,
      `WebSocket PubSub URL: ${localnet.wsUrl}`,
      `USDC-like mint: ${localnet.usdcMint.address} (${localnet.usdcMint.decimals} decimals)`,
      `Mint authority: ${localnet.mintAuthority.address}${localnet.mintAuthority.keypairPath ? ` (${localnet.mintAuthority.keypairPath})` : ''}`,
      '',
    ].join('\n'),
  );
  const stop = () => {
    void localnet.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return localnet;
}
