import type { FastifyInstance } from 'fastify';

/**
 * Strict-Transport-Security for a gateway serving TLS itself: browsers that saw it use HTTPS only for
 * this host for a year (dashboard log-ins included), so a network attacker cannot downgrade a later visit
 * to plain HTTP and read the session cookie.
 *
 * No `includeSubDomains`: the gateway cannot know what runs on the subdomains of its host name, and a
 * year of forced HTTPS would break any of them still on plain HTTP. No `preload` either: that is a
 * domain owner's decision, made at hstspreload.org, not a server default. An operator who wants either
 * sets the header at a proxy (docs/tls.md). Never sent over plain HTTP, where RFC 6797 §7.2 forbids it.
 */
export const HSTS_HEADER = 'max-age=31536000';

/** Adds the header to every reply, errors included, so no page of the host is left out. */
export function installHsts(app: FastifyInstance): void {
  // onSend, not onRequest: it also runs for replies an earlier onRequest hook ended with an error.
  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.header('strict-transport-security', HSTS_HEADER);
    done(null, payload);
  });
}
