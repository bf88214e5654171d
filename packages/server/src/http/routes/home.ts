import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';

const STYLE = 'body{font:16px/1.5 system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em}';

/**
 * The landing page's only style is this inline block, allowed by its hash: the page runs no script and
 * loads nothing, so its policy can stay stricter than the dashboard's.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`,
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function landingPage(version: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gate402</title><style>${STYLE}</style></head>
<body><h1>gate402 ${version}</h1>
<p>A self-hostable payment gateway for the x402 protocol. This gateway serves its API only; the web
dashboard is switched off here.</p>
<ul>
<li><a href="docs">API documentation</a> (<a href="openapi.json">OpenAPI</a>, <a href="asyncapi.json">AsyncAPI</a>)</li>
<li><a href="healthz">Health</a></li>
</ul></body></html>
`;
}

/** What a JSON client gets at `/`: where things are. */
function links(version: string, dashboard: boolean) {
  return {
    name: 'gate402',
    version,
    links: {
      docs: '/docs',
      openapi: '/openapi.json',
      asyncapi: '/asyncapi.json',
      health: '/healthz',
      ...(dashboard ? { dashboard: '/dashboard' } : {}),
    },
  };
}

/**
 * `GET /`: someone who opens the gateway's address in a browser lands on the dashboard when it is served,
 * else on a small page of links; a client asking for JSON only gets the links as JSON. Public, like
 * /healthz: it says nothing /docs does not.
 */
export async function homeRoutes(app: FastifyInstance, opts: { version: string; dashboard: boolean }) {
  app.get('/', { schema: { hide: true } }, async (request, reply) => {
    const accept = request.headers.accept ?? '';
    if (accept.includes('application/json') && !accept.includes('text/html')) {
      return links(opts.version, opts.dashboard);
    }
    if (opts.dashboard) return reply.redirect('/dashboard', 302);
    reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
    reply.header('x-frame-options', 'DENY');
    return reply.type('text/html; charset=utf-8').send(landingPage(opts.version));
  });
}
