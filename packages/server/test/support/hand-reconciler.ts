import { PaymentReconciler } from '../../src/workers/payment-reconciler.ts';
import type { TestGateway } from './test-gateway.ts';

/** The gateway's payment reconciler, passes run by the test; every pass looks at every open payment. */
export function handReconciler(gw: TestGateway, instanceId: string): PaymentReconciler {
  return new PaymentReconciler({
    store: gw.store,
    networks: gw.networks,
    ledger: gw.services.ledger,
    x402Receipts: gw.services.x402Receipts,
    x402Purchases: gw.services.x402Pay,
    instanceId,
    recheckMs: 0,
  });
}

/** Runs reconciler passes until the payment's status leaves `pending` (or `passes` run out); that status. */
export async function untilNotPending<Status extends { status: string }>(
  reconciler: PaymentReconciler,
  status: () => Promise<{ body: Status }>,
  passes: number,
): Promise<Status> {
  for (let i = 0; i < passes; i++) {
    await reconciler.runOnce();
    const { body } = await status();
    if (body.status !== 'pending') return body;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return (await status()).body;
}
