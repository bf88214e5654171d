import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { FLAGS as ACCOUNT_FLAGS } from '../../src/cli/account-commands.ts';
import { FLAGS as DASHBOARD_FLAGS } from '../../src/cli/dashboard-commands.ts';
import { FLAGS as FAUCET_FLAGS } from '../../src/cli/faucet-command.ts';
import { FLAGS as KEY_FLAGS } from '../../src/cli/key-commands.ts';
import { FLAGS as MCP_FLAGS } from '../../src/cli/mcp-command.ts';
import { COMMANDS, GROUPS } from '../../src/cli/usage.ts';
import { FLAGS as WALLET_FLAGS } from '../../src/cli/wallet-commands.ts';
import { FLAGS as WEBHOOK_FLAGS } from '../../src/cli/webhook-commands.ts';
import { GATE402_COMMAND } from '../support/gate402-command.ts';

/** Runs the real command; by default with a bad PORT, which proves help reads no configuration. */
function gate402(
  args: string[],
  env: Record<string, string> = { PORT: 'not-a-port' },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...GATE402_COMMAND, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 30_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function inBatches<T, R>(
  items: readonly T[],
  size: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += size)
    results.push(...(await Promise.all(items.slice(i, i + size).map(work))));
  return results;
}

/** The options a help text lists, by name: `--account ACCOUNT_ID` → account. */
function listedOptions(names: readonly string[]): string[] {
  const flags = COMMANDS.filter((c) => names.includes(c.name)).flatMap((c) =>
    c.options.map((o) => /^--([a-z-]+)/.exec(o.flag)?.[1] ?? o.flag),
  );
  return [...new Set(flags)].sort();
}

describe('gate402 --help', () => {
  it('answers on every command and subcommand, with its usage and options, exit 0', async () => {
    // A few at a time: each run is a process start of about a second.
    const runs = await inBatches(COMMANDS, 4, async (command) => ({
      command,
      long: await gate402([...command.name.split(' '), '--help']),
    }));
    for (const { command, long } of runs) {
      assert.equal(long.code, 0, `${command.name} --help: ${long.stderr}`);
      assert.equal(long.stderr, '');
      assert.ok(long.stdout.startsWith(`Usage: gate402 ${command.name}`), long.stdout);
      for (const option of command.options) assert.ok(long.stdout.includes(option.flag), option.flag);
      assert.ok(long.stdout.includes('-h, --help'));
    }
    const short = await gate402(['keys', 'create', '-h']);
    assert.equal(short.stdout, runs.find((run) => run.command.name === 'keys create')?.long.stdout);
  });

  it("lists a group's subcommands, `gate402 keys --help` among them", async () => {
    for (const group of Object.keys(GROUPS)) {
      const run = await gate402([group, '--help']);
      assert.equal(run.code, 0, run.stderr);
      for (const command of COMMANDS.filter((c) => c.name.startsWith(`${group} `))) {
        assert.ok(
          run.stdout.includes(`gate402 ${command.usage[0]}`),
          `${group} --help names ${command.name}`,
        );
      }
    }
    const keys = await gate402(['keys', '--help']);
    assert.match(
      keys.stdout,
      /^gate402 keys: API keys\n\nUsage:\n {2}gate402 keys create --account ACCOUNT_ID/,
    );
    assert.deepEqual(await gate402(['help', 'keys', 'create']), await gate402(['keys', 'create', '--help']));
  });

  it('names --chain evm wherever a chain is chosen', async () => {
    for (const name of ['wallets create', 'wallets challenge', 'wallets watch']) {
      const run = await gate402([...name.split(' '), '--help']);
      assert.match(run.stdout, /--chain solana\|evm/, name);
    }
    assert.match(
      (await gate402(['--help'])).stdout,
      /gate402 wallets create --account ACCOUNT_ID --chain solana\|evm/,
    );
  });

  it('prints every command on gate402 --help; no command or an unknown one is exit 2 with the usage', async () => {
    const help = await gate402(['--help']);
    assert.equal(help.code, 0);
    for (const command of COMMANDS)
      assert.ok(help.stdout.includes(`gate402 ${command.usage[0]}`), command.name);
    const bare = await gate402([]);
    assert.equal(bare.code, 2);
    assert.equal(bare.stderr, help.stdout);
    const unknown = await gate402(['teleport', '--help']);
    assert.equal(unknown.code, 2);
    assert.match(
      unknown.stderr,
      /^gate402: unknown command: teleport\n\ngate402 \d+\.\d+\.\d+: self-hostable/,
    );
    const misused = await gate402(['keys', 'create', '--bogus'], {});
    assert.equal(misused.code, 2);
    assert.match(misused.stderr, /Unknown option '--bogus'[\s\S]*\n\nUsage: gate402 keys create --account/);
  });

  it('lists exactly the options each command parses', () => {
    const groups: [readonly string[], Record<string, unknown>][] = [
      [['accounts create', 'accounts set-plan', 'accounts list'], ACCOUNT_FLAGS],
      [['keys create', 'keys list', 'keys revoke'], KEY_FLAGS],
      [['wallets create', 'wallets challenge', 'wallets watch'], WALLET_FLAGS],
      [
        ['webhooks create', 'webhooks list', 'webhooks delete', 'webhooks enable', 'webhooks disable'],
        WEBHOOK_FLAGS,
      ],
      [['dashboard set-password'], DASHBOARD_FLAGS],
      [['faucet'], FAUCET_FLAGS],
      [['mcp'], MCP_FLAGS],
    ];
    for (const [names, flags] of groups) {
      assert.deepEqual(listedOptions(names), Object.keys(flags).sort(), names.join(', '));
    }
  });
});
