import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../../domain/gateway-error.ts';
import { sendError } from '../plugins/errors.ts';

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

/**
 * Everything from this origin and nothing else: no outside fonts or scripts (the page works offline),
 * no inline script, no framing. React sets styles through the DOM, which style-src does not restrict.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "object-src 'none'",
].join('; ');

interface Asset {
  readonly body: Buffer;
  readonly type: string;
  /** Vite puts a content hash in every file name under assets/: such a file never changes. */
  readonly immutable: boolean;
}

const NOT_BUILT = `<!doctype html><html lang="en"><meta charset="utf-8"><title>gate402 dashboard</title>
<body><h1>The dashboard is not built</h1><p>Run <code>npm install</code> (or
<code>npm run build -w packages/dashboard</code>) and restart the gateway.</p></body></html>`;

/**
 * Serves the built dashboard (packages/dashboard/dist) at /dashboard. The files are read once at start
 * into memory (a few hundred kilobytes): nothing on disk is ever looked up by a request's path, so no
 * path can reach outside the directory. Paths that are not files get index.html (the app's own routes).
 */
export async function dashboardStatic(app: FastifyInstance, opts: { distDir: string }) {
  const assets = loadAssets(opts.distDir);
  const index = assets.get('index.html');

  const serve = (request: FastifyRequest, reply: FastifyReply, path: string) => {
    securityHeaders(reply);
    if (index === undefined) return reply.code(503).type('text/html; charset=utf-8').send(NOT_BUILT);
    const asset = assets.get(path);
    if (asset !== undefined) {
      reply.header('cache-control', asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
      return reply.type(asset.type).send(asset.body);
    }
    const lastSegment = path.split('/').pop() ?? '';
    if (lastSegment.includes('.')) {
      return sendError(reply, request, new GatewayError('NOT_FOUND', { message: 'No such dashboard file.' }));
    }
    reply.header('cache-control', 'no-cache');
    return reply.type(index.type).send(index.body);
  };

  app.get('/dashboard', { schema: { hide: true } }, (request, reply) => serve(request, reply, 'index.html'));
  app.get('/dashboard/*', { schema: { hide: true } }, (request, reply) => {
    const path = (request.params as { '*': string })['*'];
    if (path.startsWith('api/') || path === 'api') {
      return sendError(
        reply,
        request,
        new GatewayError('NOT_FOUND', {
          message: `No route ${request.method} /dashboard/${path.slice(0, 200)}.`,
        }),
      );
    }
    return serve(request, reply, path === '' ? 'index.html' : path);
  });
}

function securityHeaders(reply: FastifyReply): void {
  reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
  reply.header('x-content-type-options', 'nosniff');
  reply.header('referrer-policy', 'no-referrer');
  reply.header('x-frame-options', 'DENY');
}

function loadAssets(root: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  if (!statSync(root, { throwIfNoEntry: false })?.isDirectory()) return assets;
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else {
        const key = relative(root, path).split(sep).join('/');
        assets.set(key, {
          body: readFileSync(path),
          type: CONTENT_TYPES[extname(name)] ?? 'application/octet-stream',
          immutable: key.startsWith('assets/'),
        });
      }
    }
  };
  walk(root);
  return assets;
}
