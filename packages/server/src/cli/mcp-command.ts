import { parseArgs } from 'node:util';
import { Gate402Client } from '@gate402/client';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createAgentMcpServer } from '../mcp/agent-mcp-server.ts';
import { AGENT_FETCH_LIMITS } from '../mcp/agent-tools.ts';
import { guardedFetch } from '../outbound/guarded-fetch.ts';
import { checkOutboundUrl } from '../outbound/ssrf-guard.ts';
import { GATE402_VERSION } from '../version.ts';
import { UsageError } from './cli-context.ts';

export const FLAGS = {
  url: { type: 'string' },
  'public-only': { type: 'boolean' },
} as const;

/** Where `gate402 serve` listens by default. */
const DEFAULT_GATEWAY_URL = 'http://127.0.0.1:8402';

/**
 * `gate402 mcp`: an MCP server on stdin/stdout for an agent's MCP client (Claude Desktop, an IDE, an
 * agent framework), offering the agent tools (mcp/agent-tools.ts) of the gateway at GATE402_URL (or
 * --url) as the account of GATE402_API_KEY. It holds no storage and no keys of its own: every tool call
 * is a request to that gateway with @gate402/client, so the gateway's checks (key, rate limit, plan,
 * spending) all apply. The API key is read from the environment only, never from an argument, which the
 * process list would show. Stdout carries the protocol alone; anything to say goes to stderr. Runs until
 * the client closes stdin.
 *
 * @example
 *   GATE402_URL=https://pay.example.com GATE402_API_KEY=g402_… npx gate402 mcp
 */
export async function mcpCommand(args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const { values } = parseArgs({ args, options: FLAGS, allowPositionals: false });
  const url = values.url ?? env.GATE402_URL ?? DEFAULT_GATEWAY_URL;
  try {
    checkOutboundUrl(url, { allowPrivate: true });
  } catch {
    throw new UsageError(`the gateway URL ${JSON.stringify(url)} is not an http(s) URL`);
  }
  const apiKey = env.GATE402_API_KEY;
  if (apiKey === undefined || apiKey === '') {
    throw new UsageError(
      'set GATE402_API_KEY to the API key the agent acts with (never pass it as an argument)',
    );
  }
  // The agent's own machine: by default it fetches what its user could (a seller on localhost included);
  // --public-only holds it to the gateway's /mcp rule instead.
  const sellerFetch =
    values['public-only'] === true
      ? guardedFetch({ allowPrivate: false }, { maxRequestBytes: AGENT_FETCH_LIMITS.maxRequestBytes })
      : globalThis.fetch;
  const server = createAgentMcpServer(
    {
      gateway: new Gate402Client({ url, apiKey, timeoutMs: AGENT_FETCH_LIMITS.timeoutMs }),
      sellerFetch,
      limits: AGENT_FETCH_LIMITS,
    },
    {
      version: GATE402_VERSION,
      onUnforeseen: (error, tool) =>
        process.stderr.write(
          `gate402 mcp: ${tool} failed: ${error instanceof Error ? error.message : String(error)}\n`,
        ),
    },
  );
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = resolve;
  });
  await server.connect(transport);
  process.stderr.write(`gate402 mcp: serving the agent tools of ${url} on stdio\n`);
  const ended = () => void server.close();
  process.stdin.once('end', ended);
  process.stdin.once('close', ended);
  await closed;
}
