import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { PaymentProofs } from '../../services/payments/proofs/payment-proof.ts';
import { GATE402_VERSION } from '../../version.ts';

/** GET /.well-known/gate402.json: the keys that sign this gateway's payment proofs. Public. */
export async function wellKnownRoutes(app: FastifyInstance, opts: { proofs: PaymentProofs }) {
  app.get(
    '/.well-known/gate402.json',
    {
      schema: {
        operationId: 'getProofKeys',
        tags: ['proofs'],
        summary: 'Public keys of this gateway’s payment-proof attestations, for other gate402 instances.',
        response: {
          200: Type.Object({
            service: Type.Literal('gate402'),
            version: Type.String(),
            proofKeys: Type.Array(
              Type.Object({ kid: Type.String(), alg: Type.Literal('Ed25519'), publicKey: Type.String() }),
            ),
          }),
        },
      },
    },
    async () => ({
      service: 'gate402' as const,
      version: GATE402_VERSION,
      proofKeys: opts.proofs.publishedKeys(),
    }),
  );
}
