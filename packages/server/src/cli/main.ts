import { ConfigError } from '../config.ts';
import { GatewayError, toErrorBody } from '../domain/gateway-error.ts';
import { GATE402_VERSION } from '../version.ts';
import { type CliContext, createContext, UsageError } from './cli-context.ts';
import { helpFor, mainHelp } from './usage.ts';

/** Runs one command; returns the exit code (0 ok, 1 refused, 2 wrong usage or configuration). */
export async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  const json = args.includes('--json');
  if (command === undefined) {
    process.stderr.write(`${mainHelp()}\n`);
    return 2;
  }
  if (command === '--version' || command === 'version') {
    process.stdout.write(`${GATE402_VERSION}\n`);
    return 0;
  }
  // Help before anything else: it reads no configuration, so it works whatever the environment holds.
  const help = helpRequest(command, args);
  if (help !== undefined) {
    const text = helpFor(help);
    if (text === undefined) return report(new UsageError(`unknown command: ${help.join(' ')}`), json);
    process.stdout.write(`${text}\n`);
    return 0;
  }
  if (command === 'localnet') {
    // Its own parser and messages; a usage error there sets the exit code rather than throwing.
    const { runLocalnetCli } = await import('@gate402/localnet');
    await runLocalnetCli(args);
    return Number(process.exitCode ?? 0);
  }
  if (command === 'mcp') {
    // A client of a gateway, not an operator's tool: it reads GATE402_URL and GATE402_API_KEY, not the
    // server's configuration (and its stdout is the MCP protocol's alone).
    try {
      await (await import('./mcp-command.ts')).mcpCommand(args, process.env);
      return 0;
    } catch (error) {
      return report(error, false, [command]);
    }
  }
  try {
    const ctx = createContext(json);
    await run(ctx, command, args);
    return 0;
  } catch (error) {
    const sub = args[0];
    return report(error, json, sub === undefined || sub.startsWith('-') ? [command] : [command, sub]);
  }
}

/** Commands load what they need when they run, so `gate402 keys list` does not pay for the HTTP stack. */
async function run(ctx: CliContext, command: string, args: string[]): Promise<void> {
  switch (command) {
    case 'serve':
      noArguments(command, args);
      return (await import('./serve-command.ts')).serveCommand(ctx);
    case 'migrate': {
      noArguments(command, args);
      // Opening storage migrates it; report what was applied.
      const { openStore, storageLocation } = await import('../store/open-store.ts');
      const { store, migrated } = await openStore(storageLocation(ctx.config));
      await store.close();
      return ctx.result(
        { migrated },
        migrated.length > 0 ? `applied: ${migrated.join(', ')}` : 'already current',
      );
    }
    case 'accounts':
      return (await import('./account-commands.ts')).accountsCommand(ctx, args);
    case 'keys':
      return (await import('./key-commands.ts')).keysCommand(ctx, args);
    case 'wallets':
      return (await import('./wallet-commands.ts')).walletsCommand(ctx, args);
    case 'webhooks':
      return (await import('./webhook-commands.ts')).webhooksCommand(ctx, args);
    case 'dashboard':
      return (await import('./dashboard-commands.ts')).dashboardCommand(ctx, args);
    case 'faucet':
      return (await import('./faucet-command.ts')).faucetCommand(ctx, args);
    case 'policies':
      return (await import('./policy-commands.ts')).policiesCommand(ctx, args, process.env);
    default:
      throw new UsageError(`unknown command: ${command}`);
  }
}

/**
 * serve and migrate are configured by the environment alone. An argument is refused rather than
 * ignored: `gate402 serve --port 9000` would otherwise serve on the default port without a word.
 */
function noArguments(command: string, args: string[]): void {
  const extra = args.filter((arg) => arg !== '--json');
  if (extra.length === 0) return;
  throw new UsageError(
    `${command} takes no arguments (got ${extra.join(' ')}); it is configured by environment variables, e.g. PORT=9000 DATA_DIR=./data gate402 ${command}`,
  );
}

/**
 * The command words whose help was asked for: `gate402 help keys create`, `gate402 keys --help`,
 * `gate402 keys create -h`. Options after `--` are arguments, not a request for help.
 */
function helpRequest(command: string, args: readonly string[]): string[] | undefined {
  if (command === 'help' || command === '--help' || command === '-h') {
    return args.filter((arg) => !arg.startsWith('-'));
  }
  const end = args.indexOf('--');
  const options = end === -1 ? args : args.slice(0, end);
  if (!options.includes('--help') && !options.includes('-h')) return undefined;
  const sub = options[0];
  return sub === undefined || sub.startsWith('-') ? [command] : [command, sub];
}

function report(error: unknown, json: boolean, words: readonly string[] = []): number {
  if (error instanceof UsageError || isParseArgsError(error)) {
    // The help of the command that was misused (its group's, or all of them, when it is not known).
    const usage = (words.length === 0 ? undefined : helpFor(words)) ?? mainHelp();
    process.stderr.write(`gate402: ${(error as Error).message}\n\n${usage}\n`);
    return 2;
  }
  if (error instanceof ConfigError) {
    process.stderr.write(`gate402: ${error.message}\n`);
    return 2;
  }
  if (error instanceof GatewayError) {
    if (json) process.stdout.write(`${JSON.stringify(toErrorBody(error))}\n`);
    else {
      const details = Object.entries(error.details ?? {}).map(([field, rule]) => `\n  ${field}: ${rule}`);
      process.stderr.write(`gate402: ${error.message}${details.join('')}\n`);
    }
    return 1;
  }
  process.stderr.write(`gate402: ${error instanceof Error ? error.message : String(error)}\n`);
  return 1;
}

function isParseArgsError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS');
}
