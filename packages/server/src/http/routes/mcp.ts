import { Gate402Client } from '@gate402/client';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AGENT_FETCH_LIMITS } from '../../mcp/agent-tools.ts';
import { answerMcpPost } from '../../mcp/mcp-http-exchange.ts';
import { guardedFetch } from '../../outbound/guarded-fetch.ts';
import type { OutboundPolicy } from '../../outbound/ssrf-guard.ts';

export const MCP_PATH = '/mcp';

export interface McpRouteOptions {
  /** The whole app: each tool call is an in-process request to the gateway's own API (see injectFetch). */
  readonly app: FastifyInstance;
  /** Where fetch_paid_url may go (ALLOW_PRIVATE_OUTBOUND_URLS, OUTBOUND_PORTS). */
  readonly outbound: OutboundPolicy;
  readonly version: string;
}

const BEARER = /^Bearer +(\S+)$/i;

/**
 * MCP over streamable HTTP at /mcp (stateless, JSON answers): the agent tools of mcp/agent-tools.ts, as
 * the API key's account. The route is a door of the access policy like every API route (feature `mcp`:
 * key, rate limit, plan), and each tool call then goes through the API's own doors in process, with the
 * same key: a tool does nothing the key could not do with plain HTTP requests, and each API request a
 * tool makes counts against the rate limit as it would over HTTP. Not in the OpenAPI document: MCP is
 * JSON-RPC, and its clients learn the tools from `tools/list`.
 */
export async function mcpRoutes(app: FastifyInstance, options: McpRouteOptions) {
  const api = injectFetch(options.app);
  const sellerFetch = guardedFetch(options.outbound, { maxRequestBytes: AGENT_FETCH_LIMITS.maxRequestBytes });

  app.post(
    MCP_PATH,
    { config: { feature: 'mcp' }, schema: { hide: true } },
    async (request: FastifyRequest, reply: FastifyReply) => {
      const key = BEARER.exec(request.headers.authorization ?? '')?.[1];
      // The tool's own deadline bounds its calls to the API too, so the agent hears an answer before its
      // MCP client gives up (usually at 60 s).
      const gateway = new Gate402Client({
        url: 'http://gate402.internal',
        apiKey: key,
        fetch: api,
        timeoutMs: AGENT_FETCH_LIMITS.timeoutMs,
      });
      const answer = await answerMcpPost(
        { gateway, sellerFetch, limits: AGENT_FETCH_LIMITS },
        {
          version: options.version,
          onUnforeseen: (error, tool) => request.log.error({ err: error, tool }, 'MCP tool failed'),
        },
        { headers: request.headers, body: request.body },
      );
      return sendWebResponse(reply, answer);
    },
  );

  // Stateless: no stream for server-initiated messages (GET) and no session to end (DELETE).
  for (const method of ['GET', 'DELETE'] as const) {
    app.route({
      method,
      url: MCP_PATH,
      config: { feature: 'mcp' },
      schema: { hide: true },
      handler: async (_request, reply) =>
        reply
          .status(405)
          .header('allow', 'POST')
          .send({
            jsonrpc: '2.0',
            error: {
              code: -32000,
              message: 'Method not allowed: this MCP endpoint is stateless; POST to it.',
            },
            id: null,
          }),
    });
  }
}

async function sendWebResponse(reply: FastifyReply, answer: Response): Promise<FastifyReply> {
  reply.status(answer.status);
  answer.headers.forEach((value, name) => {
    reply.header(name, value);
  });
  const text = await answer.text();
  return reply.send(text === '' ? undefined : text);
}

/**
 * `fetch` answered by the app itself (Fastify's inject): the request runs every hook and check an HTTP
 * request would (authentication, rate limit, plan, validation, idempotency) without leaving the process.
 */
export function injectFetch(app: FastifyInstance): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const body = request.body === null ? undefined : Buffer.from(await request.arrayBuffer());
    const answer = await app.inject({
      method: request.method as 'GET',
      url: url.pathname + url.search,
      headers,
      ...(body === undefined ? {} : { payload: body }),
    });
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [value]) responseHeaders.append(name, String(one));
    }
    const empty = answer.statusCode === 204 || answer.statusCode === 304;
    return new Response(empty ? null : answer.rawPayload, {
      status: answer.statusCode,
      headers: responseHeaders,
    });
  };
}
