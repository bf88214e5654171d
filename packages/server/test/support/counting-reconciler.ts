import { GatewayMetrics } from '../../src/metrics/gateway-metrics.ts';
import { PaymentReconciler } from '../../src/workers/payment-reconciler.ts';
import type { TestGateway } from './test-gateway.ts';

/**
 * A reconciler on `gw`'s storage that may sign replacements and rechecks at once, with the finality
 * metrics of its own registry, so a reorg test can say what the finality watch did.
 */
export function countingReconciler(
  gw: TestGateway,
  instanceId: string,
): { reconciler: PaymentReconciler; reorgCounts(network?: string): Promise<Record<string, number>> } {
  const metrics = new GatewayMetrics();
  const reconciler = new PaymentReconciler({
    store: gw.store,
    networks: gw.networks,
    ledger: gw.services.ledger,
    wallets: gw.services.wallets,
    instanceId,
    recheckMs: 0,
    finality: metrics,
  });
  return {
    reconciler,
    /** gate402_payment_reorgs_total by outcome (on `network` alone when given); outcomes never counted left out. */
    reorgCounts: async (network) => {
      const series = await metrics.registry.getSingleMetric('gate402_payment_reorgs_total')?.get();
      return Object.fromEntries(
        (series?.values ?? [])
          .filter((v) => (network === undefined || v.labels.network === network) && v.value > 0)
          .map((v) => [String(v.labels.outcome), v.value]),
      );
    },
  };
}
