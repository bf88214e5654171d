import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';

import { Marked } from 'marked';
import { GatewayError } from '../../domain/gateway-error.ts';

/** What the guide pages need of a reply. */
interface HtmlReply {
  header(name: string, value: string): unknown;
  type(contentType: string): { send(body: string): unknown };
}

/**
 * Where the guides are: run from the TypeScript sources (the repository), its docs/, always the current
 * text; compiled (the published package), the copy the build puts in packages/server/guide/, never a
 * docs/ folder of whatever project installed it.
 */
const GUIDE_DIR = import.meta.url.endsWith('.ts')
  ? fileURLToPath(new URL('../../../../../docs/', import.meta.url))
  : fileURLToPath(new URL('../../../guide/', import.meta.url));

/** A guide's name: a file name without `.md`, in docs/ or docs/reference/; nothing that walks elsewhere. */
const NAME = /^(?:reference\/)?[a-z0-9][a-z0-9-]{0,63}$/;

const STYLE = [
  'body{font:16px/1.6 system-ui,sans-serif;max-width:52em;margin:2em auto;padding:0 1em;color:#1b1b1b}',
  'pre,code{font:14px/1.45 ui-monospace,monospace;background:#f4f4f4}',
  'pre{padding:.8em;overflow:auto}',
  'table{border-collapse:collapse}',
  'td,th{border:1px solid #ddd;padding:.3em .6em;vertical-align:top}',
  'nav{margin-bottom:1.5em}',
].join('');

/** The guides run no script and load nothing but their own page: a policy stricter than the dashboard's. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`,
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · gate402</title><style>${STYLE}</style></head>
<body><nav><a href="/docs/guide/">Guides</a> · <a href="/docs">API reference</a></nav>
<main>${body}</main></body></html>
`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The first `# ` heading of a markdown text, else the name. */
function titleOf(markdown: string, name: string): string {
  return /^# (.+)$/m.exec(markdown)?.[1]?.trim() ?? name;
}

/**
 * `GET /docs/guide/`: the guides of docs/ (custodial payments, local mode, x402, events, finality,
 * operations, the generated configuration and error references, …) rendered as pages, offline, from
 * the gateway itself. Public, as /docs is.
 */
export async function guideRoutes(app: FastifyInstance) {
  const dir = existsSync(GUIDE_DIR) ? GUIDE_DIR : undefined;
  // Rendered once per process: the files do not change under a running gateway.
  const rendered = new Map<string, string>();
  const markdown = new Marked({ gfm: true });

  const read = (name: string): string | undefined => {
    if (dir === undefined || !NAME.test(name)) return undefined;
    const file = `${dir}${name}.md`;
    return existsSync(file) ? readFileSync(file, 'utf8') : undefined;
  };

  app.get('/docs/guide/', { schema: { hide: true } }, async (_request, reply) => {
    const entries = (folder: string, prefix: string) =>
      dir === undefined || !existsSync(`${dir}${folder}`)
        ? []
        : readdirSync(`${dir}${folder}`)
            .filter((file) => file.endsWith('.md'))
            .map((file) => `${prefix}${file.slice(0, -3)}`)
            .filter((name) => NAME.test(name))
            .sort();
    const list = (names: string[]) =>
      names
        .map((name) => `<li><a href="${name}.md">${escapeHtml(titleOf(read(name) ?? '', name))}</a></li>`)
        .join('\n');
    const body = `<h1>gate402 guides</h1>
<ul>
${list(entries('', ''))}
</ul>
<h2>Reference</h2>
<ul>
${list(entries('reference', 'reference/'))}
<li><a href="/docs">HTTP API (OpenAPI)</a></li>
</ul>`;
    return send(reply, page('Guides', body));
  });

  const serve = async (name: string, reply: HtmlReply) => {
    let html = rendered.get(name);
    if (html === undefined) {
      const text = read(name);
      if (text === undefined) {
        throw new GatewayError('NOT_FOUND', { message: `No guide named ${name}: see /docs/guide/` });
      }
      html = page(titleOf(text, name), await markdown.parse(text));
      rendered.set(name, html);
    }
    return send(reply, html);
  };
  app.get<{ Params: { name: string } }>('/docs/guide/:name', { schema: { hide: true } }, (request, reply) =>
    serve(request.params.name.replace(/\.md$/, ''), reply),
  );
  app.get<{ Params: { name: string } }>(
    '/docs/guide/reference/:name',
    { schema: { hide: true } },
    (request, reply) => serve(`reference/${request.params.name.replace(/\.md$/, '')}`, reply),
  );
}

function send(reply: HtmlReply, html: string) {
  reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
  reply.header('x-content-type-options', 'nosniff');
  reply.header('referrer-policy', 'no-referrer');
  reply.header('x-frame-options', 'DENY');
  return reply.type('text/html; charset=utf-8').send(html);
}
