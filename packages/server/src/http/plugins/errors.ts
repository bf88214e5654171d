import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ChainError } from '../../chains/chain-error.ts';
import { GatewayError, invalidParameters, toErrorBody } from '../../domain/gateway-error.ts';
import { isStorageUnavailable, STORAGE_RETRY_AFTER_SECONDS } from '../../store/storage-unavailable.ts';
import { validationDetails } from './validation.ts';

/**
 * The one place where failures become HTTP answers (spec §7). Every error body has the shape
 * `{success:false, error:{code, message, details?, retryAfter?, requestId}}`. Internals are logged
 * with the request id and never sent: a 500 says only that something failed and which request it was.
 */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | GatewayError | ChainError, request, reply) => {
    const gatewayError = toGatewayError(error);
    if (gatewayError.status >= 500) {
      request.log.error({ err: error, cause: gatewayError.cause }, 'request failed');
    } else {
      request.log.info({ code: gatewayError.code }, 'request refused');
    }
    return sendError(reply, request, gatewayError);
  });

  app.setNotFoundHandler((request, reply) =>
    sendError(
      reply,
      request,
      new GatewayError('NOT_FOUND', { message: `No route ${request.method} ${routePath(request)}.` }),
    ),
  );
}

/** The longest path parameter the router takes (Fastify's default, named here so the message can say it). */
export const MAX_PATH_PARAMETER_LENGTH = 100;

/**
 * Fastify's `frameworkErrors`: a URL the router refuses before any route or hook runs (malformed
 * percent-encoding, a path parameter over MAX_PATH_PARAMETER_LENGTH). Answered with the spec's error
 * body like every other refusal — Fastify's own answer has another shape and no request id. The
 * X-Request-Id header is set here because no onRequest hook ran.
 */
export function frameworkErrorHandler(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  reply.header('x-request-id', request.id);
  switch (error.code) {
    case 'FST_ERR_BAD_URL':
      return sendError(
        reply,
        request,
        invalidParameters(
          { path: 'must be valid percent-encoded UTF-8' },
          'The URL path has a malformed percent-encoded character.',
        ),
      );
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return sendError(
        reply,
        request,
        invalidParameters(
          { path: `each path parameter must be at most ${MAX_PATH_PARAMETER_LENGTH} characters` },
          'A path parameter of the URL is too long.',
        ),
      );
  }
  request.log.error({ err: error }, 'request refused by the router');
  return sendError(reply, request, toGatewayError(error));
}

/**
 * Fastify's `clientErrorHandler`: a request Node's HTTP parser could not read (a malformed request line
 * or header, headers over Node's 16 KiB, a client too slow to send them). No route, hook or request id
 * exists yet, so the answer is written to the socket directly — with the spec's error body, like every
 * other refusal, and the HTTP status the failure calls for (400, 431, 408). The connection is then closed.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Duplex): void {
  // A reset connection has nobody to answer (https://nodejs.org/api/http.html#event-clienterror).
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, refusal] = clientRefusal(error.code);
  const body = JSON.stringify(toErrorBody(refusal));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** The HTTP status and the error for what Node's parser reported (its error code). */
function clientRefusal(code: string | undefined): [number, GatewayError] {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return [
        431,
        invalidParameters({ headers: 'must total at most 16 KiB' }, 'The request headers are too large.'),
      ];
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [
        408,
        invalidParameters({ request: 'must arrive in time' }, 'The request was not received in time.'),
      ];
    default:
      return [
        400,
        invalidParameters({ request: 'must be valid HTTP/1.1' }, 'The HTTP request is malformed.'),
      ];
  }
}

export function sendError(reply: FastifyReply, request: FastifyRequest, error: GatewayError): FastifyReply {
  if (error.retryAfter !== undefined) reply.header('retry-after', String(error.retryAfter));
  // An answer that may change when asked again (GatewayError.final) leaves an Idempotency-Key free:
  // a retry is judged afresh instead of replaying this refusal (see installIdempotency).
  if (!error.final) request.idempotencyUnfinished = true;
  return reply.code(error.status).type('application/json').send(toErrorBody(error, request.id));
}

/** What a caller calls each part of a request Fastify validates, for the error message. */
const PART_NAMES: Record<NonNullable<FastifyError['validationContext']>, string> = {
  body: 'request parameters',
  params: 'path parameters',
  querystring: 'query parameters',
  headers: 'request headers',
};

function toGatewayError(error: FastifyError | GatewayError | ChainError): GatewayError {
  // Storage down, stalled or locked, wherever it surfaced — also as the cause of an internal error a
  // service wrapped it in. Nothing was kept, so the caller may retry (a 503 leaves an Idempotency-Key free).
  if (!(error instanceof GatewayError && error.code !== 'INTERNAL_ERROR') && isStorageUnavailable(error)) {
    return new GatewayError('SERVICE_UNAVAILABLE', {
      message: 'Storage is unavailable; retry shortly.',
      retryAfter: STORAGE_RETRY_AFTER_SECONDS,
      cause: error,
    });
  }
  if (error instanceof GatewayError) return error;
  if (error instanceof ChainError) return fromChainError(error);
  if (error.validation !== undefined) {
    const details = validationDetails(error.validation);
    const part = error.validationContext === undefined ? 'body' : error.validationContext;
    return invalidParameters(details, `Invalid ${PART_NAMES[part]}: ${Object.keys(details).join(', ')}.`);
  }
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return invalidParameters({ body: 'must be valid JSON' }, 'Request body is not valid JSON.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return invalidParameters({ body: 'is required' }, 'Request body is empty but Content-Type is JSON.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new GatewayError('PAYLOAD_TOO_LARGE');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new GatewayError('UNSUPPORTED_MEDIA_TYPE');
  }
  // Other client errors found by Fastify itself (bad Content-Length, bad content encoding, …).
  if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
    return invalidParameters({ request: 'is malformed' }, 'The request is malformed.');
  }
  return new GatewayError('INTERNAL_ERROR', { cause: error });
}

/** What a caller is told to wait when the chain could not say when its endpoints are tried again. */
const DEFAULT_CHAIN_RETRY_AFTER_SECONDS = 2;

/** Chain refusals that services did not translate themselves. */
function fromChainError(error: ChainError): GatewayError {
  switch (error.kind) {
    case 'insufficient_funds':
      return new GatewayError('INSUFFICIENT_BALANCE', { cause: error });
    case 'recipient_refused':
      return new GatewayError('INVALID_RECIPIENT', {
        message:
          error.recipientProblem === undefined
            ? 'The recipient refuses this transfer.'
            : `The recipient cannot take this transfer: it ${error.recipientProblem}.`,
        details: {
          recipientAddress: error.recipientProblem ?? 'is a contract that does not accept the transfer',
        },
        cause: error,
      });
    case 'unavailable':
      return new GatewayError('CHAIN_UNAVAILABLE', {
        retryAfter: error.retryAfterSeconds ?? DEFAULT_CHAIN_RETRY_AFTER_SECONDS,
        cause: error,
      });
    default:
      return new GatewayError('INTERNAL_ERROR', { cause: error });
  }
}

/** The path without the query string, which may carry things that do not belong in an error message. */
function routePath(request: FastifyRequest): string {
  const path = request.url.split('?', 1)[0] ?? '/';
  return path.length > 200 ? `${path.slice(0, 200)}…` : path;
}
