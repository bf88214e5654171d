// JSON-RPC 2.0 envelope handling shared by HTTP: single requests, batches, notifications and
// the error objects for malformed envelopes. Method handlers never see an invalid envelope.
import { internalError, invalidParams, invalidRequest, methodNotFound, RpcError } from './rpc-error.ts';
import type { RpcContext, RpcMethod } from './rpc-method.ts';

export const MAX_BATCH = 100;

type Id = string | number | null;

export interface JsonRpcResponse {
  jsonrpc: '2.0';
  id: Id;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

export function errorResponse(id: Id, error: RpcError): JsonRpcResponse {
  const body: JsonRpcResponse['error'] = { code: error.code, message: error.message };
  if (error.data !== undefined) body.data = error.data;
  return { jsonrpc: '2.0', error: body, id };
}

export class Dispatcher {
  constructor(
    private readonly methods: Readonly<Record<string, RpcMethod>>,
    private readonly context: RpcContext,
    private readonly onInternalError: (error: unknown) => void,
  ) {}

  /** Answers a parsed body: a response, a batch of them, or undefined when only notifications came. */
  handle(body: unknown): JsonRpcResponse | JsonRpcResponse[] | undefined {
    if (!Array.isArray(body)) return this.handleOne(body);
    if (body.length === 0) return errorResponse(null, invalidRequest());
    if (body.length > MAX_BATCH) {
      return errorResponse(
        null,
        invalidRequest(`batch of ${body.length} requests exceeds the limit of ${MAX_BATCH}`),
      );
    }
    const out: JsonRpcResponse[] = [];
    for (const item of body) {
      const response = this.handleOne(item);
      if (response) out.push(response);
    }
    return out.length > 0 ? out : undefined;
  }

  private handleOne(request: unknown): JsonRpcResponse | undefined {
    if (typeof request !== 'object' || request === null || Array.isArray(request)) {
      return errorResponse(null, invalidRequest());
    }
    const { jsonrpc, method, params, id } = request as Record<string, unknown>;
    const validId = id === undefined || id === null || typeof id === 'string' || typeof id === 'number';
    const replyId: Id = validId ? ((id as Id | undefined) ?? null) : null;
    if (jsonrpc !== '2.0' || typeof method !== 'string' || !validId)
      return errorResponse(replyId, invalidRequest());
    const isNotification = !('id' in request);
    const response = this.call(method, params, replyId);
    return isNotification ? undefined : response;
  }

  private call(name: string, params: unknown, id: Id): JsonRpcResponse {
    const method = Object.hasOwn(this.methods, name) ? this.methods[name] : undefined;
    if (!method) return errorResponse(id, methodNotFound());
    if (params !== undefined && params !== null && !Array.isArray(params)) {
      return errorResponse(id, invalidParams('Invalid params: invalid type: map, expected a tuple.'));
    }
    try {
      return { jsonrpc: '2.0', result: method((params as unknown[] | undefined) ?? [], this.context), id };
    } catch (error) {
      if (error instanceof RpcError) return errorResponse(id, error);
      this.onInternalError(error);
      return errorResponse(id, internalError());
    }
  }
}
