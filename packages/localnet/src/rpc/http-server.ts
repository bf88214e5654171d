// JSON-RPC over HTTP with node:http: bounded bodies, keep-alive, one JSON parse and one
// stringify per request. GET /health answers like Agave's health endpoint.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type Dispatcher, errorResponse } from './dispatcher.ts';
import { stringifyJson } from './json-text.ts';
import { invalidRequest, parseError } from './rpc-error.ts';

export const MAX_BODY_BYTES = 1024 * 1024;

export function createRpcHttpServer(dispatcher: Dispatcher): Server {
  return createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/health') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    readBody(req, res, (body) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {
        send(res, 200, stringifyJson(errorResponse(null, parseError())));
        return;
      }
      const response = dispatcher.handle(parsed);
      send(res, 200, response === undefined ? '' : stringifyJson(response));
    });
  });
}

function send(res: ServerResponse, status: number, text: string): void {
  // An explicit length keeps the response in one write (no chunked encoding).
  res
    .writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
    .end(text);
}

function readBody(req: IncomingMessage, res: ServerResponse, done: (body: Buffer) => void): void {
  const declared = Number(req.headers['content-length']);
  const tooLarge = () => {
    const error = invalidRequest(`request body exceeds ${MAX_BODY_BYTES} bytes`);
    res.setHeader('connection', 'close');
    send(res, 413, stringifyJson(errorResponse(null, error)));
    // Stop reading the rest of an oversized body.
    req.destroy();
  };
  if (declared > MAX_BODY_BYTES) {
    tooLarge();
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let aborted = false;
  req.on('data', (chunk: Buffer) => {
    if (aborted) return;
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      aborted = true;
      tooLarge();
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    if (!aborted) done(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
  });
  req.on('error', () => {
    aborted = true;
  });
}
