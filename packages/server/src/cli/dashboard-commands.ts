import { parseArgs } from 'node:util';
import { MemoryRateLimiter } from '../ratelimit/memory-rate-limiter.ts';
import { DashboardAuthService } from '../services/dashboard-auth/dashboard-auth-service.ts';
import { openStore, storageLocation } from '../store/open-store.ts';
import { type CliContext, requiredFlag, UsageError, unknownSubcommand } from './cli-context.ts';

export const FLAGS = {
  account: { type: 'string' },
  email: { type: 'string' },
  json: { type: 'boolean' },
} as const;

/**
 * `gate402 dashboard set-password`: a dashboard log-in for an account made with the CLI (the way in when
 * DASHBOARD_SIGNUP is off), or a new password for an existing one. The password is read from standard
 * input, never from the command line, where other users of the machine could see it in the process list.
 */
export async function dashboardCommand(
  ctx: CliContext,
  args: string[],
  stdin: AsyncIterable<Buffer | string> = process.stdin,
): Promise<void> {
  const [sub, ...rest] = args;
  const { values } = parseArgs({ args: rest, options: FLAGS });
  if (sub !== 'set-password') throw unknownSubcommand('dashboard', sub, ['set-password']);
  const accountId = requiredFlag(values, 'account');
  const password = await firstLine(stdin);
  if (password === '')
    throw new UsageError('give the password on standard input, e.g. from a file or a prompt');
  const { store } = await openStore(storageLocation(ctx.config));
  try {
    const auth = new DashboardAuthService(store, new MemoryRateLimiter(), {
      signupEnabled: false,
      sessionTtlMs: ctx.config.dashboardSessionHours * 3_600_000,
      loginAttemptsPerMinute: ctx.config.dashboardLoginAttempts,
    });
    const { user, created } = await auth.setPassword({ accountId, email: values.email, password });
    return ctx.result(
      { accountId: user.accountId, email: user.email, created },
      created
        ? `${user.email} can now log in to the dashboard of ${user.accountId}.`
        : `new password set for ${user.email} (${user.accountId}); its open dashboard sessions have ended.`,
    );
  } finally {
    await store.close();
  }
}

async function firstLine(stdin: AsyncIterable<Buffer | string>): Promise<string> {
  let text = '';
  for await (const chunk of stdin) {
    text += chunk.toString();
    if (text.includes('\n')) break;
  }
  return (text.split(/\r?\n/, 1)[0] ?? '').trim();
}
