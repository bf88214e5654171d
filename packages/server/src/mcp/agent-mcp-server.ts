import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { AGENT_TOOLS, type AgentTool, type AgentToolContext } from './agent-tools.ts';
import { toToolFailure } from './tool-error.ts';

export interface AgentMcpServerOptions {
  readonly version: string;
  /** Told of a failure no tool foresaw (the agent sees only INTERNAL_ERROR); never given the API key. */
  readonly onUnforeseen?: (error: unknown, tool: string) => void;
}

/** Tool arguments are checked as the API checks bodies: no coercion, no unknown fields, every fault named. */
const ajv = new Ajv({ allErrors: true, coerceTypes: false, removeAdditional: false, strict: false });
(addFormats as unknown as (a: Ajv) => Ajv)(ajv);
const VALIDATORS = new Map<string, ValidateFunction>(
  AGENT_TOOLS.map((t) => [t.name, ajv.compile(t.inputSchema as object)]),
);
const TOOLS = new Map<string, AgentTool>(AGENT_TOOLS.map((t) => [t.name, t]));

/**
 * An MCP server offering the agent tools (agent-tools.ts), each call acting through `context`. Built on
 * the SDK's low-level `Server` rather than `McpServer`, whose tool schemas must be Zod: the tools'
 * schemas are TypeBox, as every schema of the gateway is, and are listed as the JSON Schema they are.
 * One is made per connection (stdio) or per request (the gateway's stateless /mcp).
 */
export function createAgentMcpServer(context: AgentToolContext, options: AgentMcpServerOptions): Server {
  const server = new Server(
    { name: 'gate402', title: 'gate402', version: options.version },
    {
      capabilities: { tools: { listChanged: false } },
      instructions:
        'gate402 pays HTTP 402 (x402) resources from custodial wallets. Use fetch_paid_url to fetch a URL that may ask for payment, always with a maxAmount you are willing to pay; get_balances, list_payments and get_payment to see the money.',
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: AGENT_TOOLS.map((t) => ({
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: t.inputSchema as { type: 'object'; [key: string]: unknown },
      annotations: { title: t.title, ...t.annotations },
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const { name, arguments: args = {} } = request.params;
    const tool = TOOLS.get(name);
    const validate = VALIDATORS.get(name);
    if (tool === undefined || validate === undefined) {
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name.slice(0, 100)}`);
    }
    if (!validate(args)) {
      return failed({
        code: 'INVALID_PARAMETERS',
        message: 'The arguments are not valid; see details.',
        details: detailsOf(validate.errors ?? []),
      });
    }
    try {
      return succeeded(await tool.run(args, context));
    } catch (error) {
      const { unforeseen, ...failure } = toToolFailure(error);
      if (unforeseen) options.onUnforeseen?.(error, name);
      return failed(failure);
    }
  });
  return server;
}

/**
 * The result as JSON text for the model and as structured content for programs. A fetched body is
 * its own text block after the rest, as the seller sent it rather than escaped inside JSON.
 */
function succeeded(result: unknown): CallToolResult {
  const structured = result as Record<string, unknown>;
  const { body, ...rest } = structured;
  if (typeof body !== 'string') {
    return {
      content: [{ type: 'text', text: JSON.stringify(result, null, 2) }],
      structuredContent: structured,
    };
  }
  return {
    content: [
      { type: 'text', text: JSON.stringify(rest, null, 2) },
      { type: 'text', text: body },
    ],
    structuredContent: structured,
  };
}

function failed(failure: Record<string, unknown> & { code: string; message: string }): CallToolResult {
  const error = { error: failure };
  return {
    isError: true,
    content: [{ type: 'text', text: JSON.stringify(error, null, 2) }],
    structuredContent: error,
  };
}

/** field → rule, as the API's INVALID_PARAMETERS details are. */
function detailsOf(errors: readonly ErrorObject[]): Record<string, string> {
  const details: Record<string, string> = {};
  for (const error of errors) {
    const path = error.instancePath.split('/').slice(1).join('.');
    const child =
      error.keyword === 'required'
        ? (error.params as { missingProperty: string }).missingProperty
        : error.keyword === 'additionalProperties'
          ? (error.params as { additionalProperty: string }).additionalProperty
          : undefined;
    const field = child === undefined ? path || 'arguments' : path === '' ? child : `${path}.${child}`;
    const rule =
      error.keyword === 'additionalProperties'
        ? 'is not an argument of this tool'
        : (error.message ?? 'is invalid');
    details[field] ??= rule;
  }
  return details;
}
