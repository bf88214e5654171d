import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ERROR_CATALOGUE, type ErrorCode } from '../domain/error-catalogue.ts';
import { GatewayError } from '../domain/gateway-error.ts';
import { type CliContext, UsageError, unknownSubcommand } from './cli-context.ts';

export const FLAGS = {
  url: { type: 'string' },
  'key-id': { type: 'string' },
  policy: { type: 'string' },
  file: { type: 'string' },
  json: { type: 'boolean' },
} as const;

const DEFAULT_URL = 'http://127.0.0.1:8402';

/**
 * `gate402 policies`: reads and sets spend policies through a running gateway's API, as the account of
 * the admin-scoped key in GATE402_API_KEY (made with `gate402 keys create --admin`). Through the API
 * rather than the database: the gateway checks networks and token symbols against the chains it is
 * connected to, which this command does not start, and the admin scope is checked at the same door as
 * for any other caller.
 *
 * @example
 *   GATE402_API_KEY=gk_live_… npx gate402 policies set --key-id key_01… \
 *     --policy '{"limits":[{"network":"solana:localnet","asset":"SOL","maxPerDay":"2"}]}'
 *   GATE402_API_KEY=gk_live_… npx gate402 policies list --json
 */
export async function policiesCommand(
  ctx: CliContext,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<void> {
  const [sub, ...rest] = args;
  const { values } = parseArgs({ args: rest, options: FLAGS, allowPositionals: false });
  const apiKey = env.GATE402_API_KEY;
  if (apiKey === undefined || apiKey === '') {
    throw new UsageError(
      'GATE402_API_KEY must hold an API key with the admin scope (gate402 keys create --admin)',
    );
  }
  const base = (values.url ?? env.GATE402_URL ?? DEFAULT_URL).replace(/\/$/, '');
  const keyId = values['key-id'];
  const path =
    keyId === undefined ? '/spend-policies/account' : `/spend-policies/keys/${encodeURIComponent(keyId)}`;
  const whose = keyId === undefined ? 'the account' : keyId;
  const call = (method: string, url: string, body?: unknown) => request(base, apiKey, method, url, body);
  switch (sub) {
    case 'list': {
      const { policies } = (await call('GET', '/spend-policies')) as { policies: unknown[] };
      return ctx.result(policies, policies.map((p) => JSON.stringify(p)).join('\n') || 'no spend policies');
    }
    case 'show': {
      const policy = await call('GET', path);
      return ctx.result(policy, JSON.stringify(policy, null, 2));
    }
    case 'set': {
      const text =
        values.policy ?? (values.file === undefined ? undefined : readFileSync(values.file, 'utf8'));
      if (text === undefined) throw new UsageError('--policy JSON or --file PATH is required');
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw new UsageError('the policy is not JSON; see docs/spend-policies.md for its fields');
      }
      const policy = await call('PUT', path, body);
      return ctx.result(policy, `spend policy of ${whose} set:\n${JSON.stringify(policy, null, 2)}`);
    }
    case 'clear': {
      const answer = await call('DELETE', path);
      return ctx.result(answer, `spend policy of ${whose} removed`);
    }
    default:
      throw unknownSubcommand('policies', sub, ['list', 'show', 'set', 'clear']);
  }
}

/** One API call; a refusal is thrown as the gateway's own error (code, message, details). */
async function request(
  base: string,
  apiKey: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${apiKey}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (error) {
    throw new GatewayError('SERVICE_UNAVAILABLE', {
      message: `no gateway answers at ${new URL(base).origin} — start \`npx gate402 serve\` or pass --url`,
      cause: error,
    });
  }
  const answer = (await response.json().catch(() => undefined)) as
    | { error?: { code?: string; message?: string; details?: Record<string, string> } }
    | undefined;
  if (response.ok) return answer;
  const code = answer?.error?.code;
  if (code !== undefined && code in ERROR_CATALOGUE) {
    throw new GatewayError(code as ErrorCode, {
      ...(answer?.error?.message === undefined ? {} : { message: answer.error.message }),
      ...(answer?.error?.details === undefined ? {} : { details: answer.error.details }),
    });
  }
  throw new GatewayError('INTERNAL_ERROR', { message: `${method} ${path} answered ${response.status}` });
}
