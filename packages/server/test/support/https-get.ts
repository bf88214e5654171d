import type { IncomingHttpHeaders } from 'node:http';
import { type Agent, request } from 'node:https';
import type { TLSSocket } from 'node:tls';

export interface HttpsAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** SHA-256 fingerprint of the certificate the server presented on this connection. */
  readonly fingerprint256: string;
  /** The request went over a connection the agent kept alive from an earlier one. */
  readonly reusedSocket: boolean;
  readonly socket: TLSSocket;
}

/**
 * GET over HTTPS with node:https, trusting `ca` only (or going through `agent`, which holds its own),
 * answering what a test checks: the reply, and which certificate and connection served it.
 */
export function httpsGet(
  url: string,
  options: { ca?: string | string[]; agent?: Agent; headers?: Record<string, string> } = {},
): Promise<HttpsAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        headers: options.headers ?? {},
        ...(options.agent === undefined ? { agent: false, ca: options.ca } : { agent: options.agent }),
      },
      (res) => {
        const socket = res.socket as TLSSocket;
        const fingerprint256 = socket.getPeerCertificate().fingerprint256;
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body,
            fingerprint256,
            reusedSocket: req.reusedSocket,
            socket,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}
