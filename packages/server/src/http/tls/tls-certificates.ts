import type { Server } from 'node:tls';
import { ConfigError } from '../../config.ts';
import {
  type CertificateSummary,
  readTlsCredentials,
  type TlsCredentials,
  type TlsFiles,
} from './tls-credentials.ts';

/** What a reload did: the certificate now served, or why the previous one is still served. */
export type TlsReload =
  | { readonly ok: true; readonly certificate: CertificateSummary }
  | { readonly ok: false; readonly problem: string };

/**
 * The certificate the gateway serves, read from TLS_CERT_FILE / TLS_KEY_FILE / TLS_CA_FILE, and
 * replaced in place by `reload()` (what `gate402 serve` does on SIGHUP, after a renewal wrote new files).
 *
 * A reload swaps the server's secure context: it applies to handshakes from then on, while connections
 * already established keep the context they were made with, so nothing in flight is dropped, keep-alive
 * connections and payment streams included. New files that do not check out (half-written, a key of
 * another certificate) leave the old context in place: a botched renewal must not take the gateway off
 * the air while the old certificate is still valid.
 */
export class TlsCertificates {
  private credentials: TlsCredentials;
  private readonly servers = new Set<Server>();

  /** Reads the files now; throws a ConfigError naming the setting when they do not check out. */
  constructor(readonly files: TlsFiles) {
    this.credentials = readTlsCredentials(files);
  }

  /** The credentials served to new connections. */
  get current(): TlsCredentials {
    return this.credentials;
  }

  /** A server (made with `current.options`) whose context `reload()` replaces. */
  attach(server: Server): void {
    this.servers.add(server);
    server.once('close', () => this.servers.delete(server));
  }

  reload(): TlsReload {
    let next: TlsCredentials;
    try {
      next = readTlsCredentials(this.files);
    } catch (error) {
      const problem = error instanceof ConfigError ? error.problems.join('; ') : (error as Error).message;
      return { ok: false, problem };
    }
    for (const server of this.servers) server.setSecureContext(next.options);
    this.credentials = next;
    return { ok: true, certificate: next.certificate };
  }
}
