import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { type OutboundPolicy, pinnedLookup, resolveOutbound } from '../outbound/ssrf-guard.ts';

/** A facilitator's answer is a few hundred bytes; anything much larger is not one. */
export const MAX_FACILITATOR_RESPONSE_BYTES = 64 * 1024;

export class RemoteFacilitatorError extends Error {
  override readonly name = 'RemoteFacilitatorError';
}

/**
 * Calls an x402 facilitator a caller named (`facilitatorUrl`): POST `<url>/verify` and `<url>/settle`,
 * and GET `<url>/supported` (the Solana fee payer a v1 payload was built for).
 * The URL passes the SSRF guard (every resolved address public unless ALLOW_PRIVATE_OUTBOUND_URLS) and
 * the connection is pinned to the checked addresses; no redirects are followed; the whole exchange
 * is bounded by `timeoutMs` and the answer by MAX_FACILITATOR_RESPONSE_BYTES.
 */
export class RemoteFacilitator {
  constructor(
    private readonly baseUrl: string,
    private readonly policy: OutboundPolicy,
    private readonly authorization: string | undefined,
  ) {}

  async call(
    operation: 'verify' | 'settle',
    body: unknown,
    timeoutMs: number,
  ): Promise<Record<string, unknown>> {
    return this.exchange(operation, JSON.stringify(body), timeoutMs);
  }

  /** GET `<url>/supported`: x402's SupportedResponse (`kinds`, `extensions`, `signers`). */
  async supported(timeoutMs: number): Promise<Record<string, unknown>> {
    const answer = await this.exchange('supported', undefined, timeoutMs);
    if (!Array.isArray(answer.kinds))
      throw new RemoteFacilitatorError("the facilitator's supported answer has no kinds");
    return answer;
  }

  /** POST `text` (GET without it) to `<url>/<operation>`; the answer's JSON object. */
  private async exchange(
    operation: 'verify' | 'settle' | 'supported',
    text: string | undefined,
    timeoutMs: number,
  ): Promise<Record<string, unknown>> {
    const target = `${this.baseUrl.replace(/\/+$/, '')}/${operation}`;
    const resolved = await resolveOutbound(target, this.policy);
    const send = resolved.url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = send(
        resolved.url,
        {
          method: text === undefined ? 'GET' : 'POST',
          lookup: pinnedLookup(resolved),
          headers: {
            ...(text === undefined
              ? {}
              : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }),
            ...(this.authorization === undefined ? {} : { authorization: this.authorization }),
          },
          timeout: timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          let read = 0;
          res.on('data', (chunk: Buffer) => {
            read += chunk.length;
            if (read > MAX_FACILITATOR_RESPONSE_BYTES) {
              res.destroy();
              reject(
                new RemoteFacilitatorError(
                  `the facilitator's ${operation} answer is larger than ${MAX_FACILITATOR_RESPONSE_BYTES} bytes`,
                ),
              );
              return;
            }
            chunks.push(chunk);
          });
          res.on('error', (error) =>
            reject(
              new RemoteFacilitatorError(`the facilitator's ${operation} answer broke off: ${error.message}`),
            ),
          );
          res.on('end', () => {
            let parsed: unknown;
            try {
              parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            } catch {
              reject(
                new RemoteFacilitatorError(
                  `the facilitator's ${operation} answer (HTTP ${res.statusCode}) is not JSON`,
                ),
              );
              return;
            }
            const status = res.statusCode ?? 0;
            const answer = parsed as Record<string, unknown> | null;
            // x402 facilitators may answer a refusal with 400 and the usual body; anything else that
            // is not 2xx (401, 404, 500…) is the facilitator failing, not the payment.
            const isAnswer =
              answer !== null &&
              typeof answer === 'object' &&
              (typeof answer.isValid === 'boolean' ||
                (typeof answer.success === 'boolean' && typeof answer.transaction === 'string'));
            if ((status < 200 || status >= 300) && !isAnswer) {
              const error = answer?.error as { message?: unknown } | undefined;
              const detail = typeof error?.message === 'string' ? `: ${error.message}` : '';
              reject(
                new RemoteFacilitatorError(
                  `the facilitator answered ${operation} with HTTP ${status}${detail}`,
                ),
              );
              return;
            }
            if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
              reject(new RemoteFacilitatorError(`the facilitator's ${operation} answer is not an object`));
              return;
            }
            resolve(parsed as Record<string, unknown>);
          });
        },
      );
      const timer = setTimeout(
        () =>
          req.destroy(
            new RemoteFacilitatorError(`the facilitator did not answer ${operation} within ${timeoutMs} ms`),
          ),
        timeoutMs,
      );
      req.on('close', () => clearTimeout(timer));
      req.on('timeout', () =>
        req.destroy(
          new RemoteFacilitatorError(`the facilitator did not answer ${operation} within ${timeoutMs} ms`),
        ),
      );
      req.on('error', (error) =>
        reject(
          error instanceof RemoteFacilitatorError
            ? error
            : new RemoteFacilitatorError(`the facilitator cannot be reached: ${error.message}`),
        ),
      );
      req.end(text ?? '');
    });
  }
}
