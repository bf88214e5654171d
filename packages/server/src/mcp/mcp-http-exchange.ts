import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { type AgentMcpServerOptions, createAgentMcpServer } from './agent-mcp-server.ts';
import type { AgentToolContext } from './agent-tools.ts';

/** The request headers the MCP transport reads; the rest (the API key above all) never reach it. */
const TRANSPORT_HEADERS = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id'] as const;

/**
 * One POST of MCP's streamable HTTP transport, stateless, answered as JSON (no event stream): a server
 * and transport are made for the request and closed after it, so nothing is kept between requests, any
 * instance answers any request, and no session outlives its key's revocation.
 */
export async function answerMcpPost(
  context: AgentToolContext,
  options: AgentMcpServerOptions,
  request: {
    readonly headers: Readonly<Record<string, string | string[] | undefined>>;
    readonly body: unknown;
  },
): Promise<Response> {
  const server = createAgentMcpServer(context, options);
  // No sessionIdGenerator: the transport's stateless mode.
  const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true });
  await server.connect(transport);
  try {
    const headers = new Headers();
    for (const name of TRANSPORT_HEADERS) {
      const value = request.headers[name];
      if (typeof value === 'string') headers.set(name, value);
    }
    return await transport.handleRequest(
      new Request('http://gate402.internal/mcp', { method: 'POST', headers }),
      {
        parsedBody: request.body,
      },
    );
  } finally {
    await server.close();
  }
}
