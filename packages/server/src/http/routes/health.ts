import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';

/** A dependency /readyz asks about: storage, Redis, each configured chain. */
export interface ReadinessCheck {
  readonly name: string;
  check(): Promise<void>;
}

const READINESS_TIMEOUT_MS = 2_000;

const CheckResult = Type.Object({
  ok: Type.Boolean(),
  error: Type.Optional(Type.String()),
  latencyMs: Type.Number(),
});

/** Unauthenticated probes for load balancers and orchestrators. */
export async function healthRoutes(app: FastifyInstance, opts: { checks: readonly ReadinessCheck[] }) {
  app.get(
    '/healthz',
    {
      schema: {
        operationId: 'getHealth',
        tags: ['health'],
        summary: 'Liveness: the process answers.',
        response: { 200: Type.Object({ status: Type.Literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        operationId: 'getReadiness',
        tags: ['health'],
        summary: 'Readiness: storage and every configured dependency answer. 503 when one does not.',
        response: {
          200: Type.Object({
            status: Type.Literal('ready'),
            checks: Type.Record(Type.String(), CheckResult),
          }),
          503: Type.Object({
            status: Type.Literal('unavailable'),
            checks: Type.Record(Type.String(), CheckResult),
          }),
        },
      },
    },
    async (_request, reply) => {
      const results = await Promise.all(opts.checks.map(runCheck));
      const checks = Object.fromEntries(results.map((r) => [r.name, r.result]));
      const ready = results.every((r) => r.result.ok);
      return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'unavailable', checks });
    },
  );
}

async function runCheck(check: ReadinessCheck) {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check.check(),
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${READINESS_TIMEOUT_MS} ms`)),
          READINESS_TIMEOUT_MS,
        );
      }),
    ]);
    return { name: check.name, result: { ok: true, latencyMs: elapsed(started) } };
  } catch (error) {
    // Only the error's own message: connection strings and secrets stay out of the answer.
    const message = error instanceof Error ? error.message.replace(/\/\/[^@\s]*@/g, '//***@') : 'failed';
    return { name: check.name, result: { ok: false, error: message, latencyMs: elapsed(started) } };
  } finally {
    clearTimeout(timer);
  }
}

function elapsed(started: number): number {
  return Math.round((performance.now() - started) * 100) / 100;
}
