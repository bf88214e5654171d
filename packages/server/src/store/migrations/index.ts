import type { Migration } from 'kysely';
import { accountsAndApiKeys } from './0001-accounts-and-api-keys.ts';
import { walletsPaymentsEvents } from './0002-wallets-payments-events.ts';
import { paymentCounts } from './0003-payment-counts.ts';
import { evmNonces } from './0004-evm-nonces.ts';
import { webhooks } from './0006-webhooks.ts';
import { x402Facilitator } from './0007-x402-facilitator.ts';
import { dashboardUsers } from './0008-dashboard-users.ts';
import { paymentsExpiredWatch } from './0009-payments-expired-watch.ts';
import { outboxRetention } from './0010-outbox-retention.ts';
import { openSettlements } from './0011-open-settlements.ts';
import { x402Receipts } from './0012-x402-receipts.ts';
import { x402SettlementClaimedBy } from './0013-x402-settlement-claimed-by.ts';
import { webhookDisabled } from './0014-webhook-disabled.ts';
import { leanerPaymentIndexes } from './0015-leaner-payment-indexes.ts';
import { x402SettlementResource } from './0016-x402-settlement-resource.ts';
import { unsettledPaymentsIndex } from './0017-unsettled-payments-index.ts';
import { walletChallenges } from './0019-wallet-challenges.ts';
import { x402SettlementAccountAndFees } from './0020-x402-settlement-account-and-fees.ts';
import { settlementsByPayment } from './0021-settlements-by-payment.ts';
import { spendPolicies } from './0022-spend-policies.ts';
import { discoveryResources } from './0023-discovery-resources.ts';
import { refunds } from './0025-refunds.ts';
import { walletLabels } from './0026-wallet-labels.ts';
import { paymentVolumeRollup } from './0028-payment-volume-rollup.ts';
import { x402SponsoredApprovals } from './0030-x402-sponsored-approvals.ts';
import { permit2Approvals } from './0031-permit2-approvals.ts';
import { discoveryIconUrl } from './0032-discovery-icon-url.ts';
import { paymentCountsChanges } from './0033-payment-counts-changes.ts';

/**
 * Every migration, in order. Names are sorted by Kysely and recorded in `kysely_migration`;
 * a name is never changed once released, and a released migration is never edited — add a new one.
 */
export const MIGRATIONS: Readonly<Record<string, Migration>> = {
  '0001-accounts-and-api-keys': accountsAndApiKeys,
  '0002-wallets-payments-events': walletsPaymentsEvents,
  '0003-payment-counts': paymentCounts,
  '0004-evm-nonces': evmNonces,
  '0006-webhooks': webhooks,
  '0007-x402-facilitator': x402Facilitator,
  '0008-dashboard-users': dashboardUsers,
  '0009-payments-expired-watch': paymentsExpiredWatch,
  '0010-outbox-retention': outboxRetention,
  '0011-open-settlements': openSettlements,
  '0012-x402-receipts': x402Receipts,
  '0013-x402-settlement-claimed-by': x402SettlementClaimedBy,
  '0014-webhook-disabled': webhookDisabled,
  '0015-leaner-payment-indexes': leanerPaymentIndexes,
  '0016-x402-settlement-resource': x402SettlementResource,
  '0017-unsettled-payments-index': unsettledPaymentsIndex,
  '0019-wallet-challenges': walletChallenges,
  '0020-x402-settlement-account-and-fees': x402SettlementAccountAndFees,
  '0021-settlements-by-payment': settlementsByPayment,
  '0022-spend-policies': spendPolicies,
  '0023-discovery-resources': discoveryResources,
  '0025-refunds': refunds,
  '0026-wallet-labels': walletLabels,
  '0028-payment-volume-rollup': paymentVolumeRollup,
  '0030-x402-sponsored-approvals': x402SponsoredApprovals,
  '0031-permit2-approvals': permit2Approvals,
  '0032-discovery-icon-url': discoveryIconUrl,
  '0033-payment-counts-changes': paymentCountsChanges,
};
