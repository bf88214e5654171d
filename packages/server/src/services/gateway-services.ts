import type { NetworkRegistry } from '../chains/network-registry.ts';
import type { SendAmountBoundsTable } from '../domain/send-amount-bounds.ts';
import type { OutboundPolicy } from '../outbound/ssrf-guard.ts';
import type { Store } from '../store/store.ts';
import { AccountService } from './accounts/account-service.ts';
import { AccountSummaryService } from './accounts/account-summary.ts';
import { SecretBox } from './custody/secret-box.ts';
import { DiscoveryCatalogue, type DiscoverySettings } from './facilitator/discovery-catalogue.ts';
import { type FacilitatorHooks, withFacilitatorHooks } from './facilitator/facilitator-hooks.ts';
import { FacilitatorService, type SponsoredFeeObserver } from './facilitator/facilitator-service.ts';
import { FeeBudget, type FeeBudgetSettings } from './facilitator/fee-budget.ts';
import { PaymentIdentifiers } from './facilitator/payment-identifier.ts';
import { SendPaymentService } from './payments/custodial/send-payment.ts';
import { PaymentExportService } from './payments/export/payment-export-service.ts';
import { LocalReceiveService } from './payments/local/local-receive.ts';
import { LocalSendService } from './payments/local/local-send.ts';
import { type ConfirmationObserver, PaymentLedger } from './payments/payment-ledger.ts';
import { PaymentQueryService } from './payments/payment-query.ts';
import { PaymentProofs, type PublishedKey } from './payments/proofs/payment-proof.ts';
import { ProofVerifier } from './payments/proofs/proof-verifier.ts';
import { VerifyPaymentService } from './payments/proofs/verify-payment.ts';
import { ReceivePaymentService } from './payments/receive-payment.ts';
import { RefundService } from './payments/refunds/refund-service.ts';
import { SendAmountBounds } from './payments/send-amount-bounds.ts';
import { Permit2ApprovalService } from './payments/x402/permit2-approvals.ts';
import { X402LocalReceiveService } from './payments/x402/x402-local-receive.ts';
import { X402PayService } from './payments/x402/x402-pay.ts';
import { X402ReceiveService } from './payments/x402/x402-receive.ts';
import { SpendGuard } from './spending/spend-guard.ts';
import { SpendPolicyService } from './spending/spend-policy-service.ts';
import { FaucetService } from './wallets/faucet-service.ts';
import { PortfolioService } from './wallets/portfolio.ts';
import { TokenInfoService } from './wallets/token-info.ts';
import { WalletService } from './wallets/wallet-service.ts';

/** Every service the delivery layers (HTTP, CLI, workers) use, built from the same parts. */
export interface GatewayServices {
  readonly accounts: AccountService;
  readonly wallets: WalletService;
  readonly faucet: FaucetService;
  readonly proofs: PaymentProofs;
  readonly ledger: PaymentLedger;
  readonly send: SendPaymentService;
  readonly receive: ReceivePaymentService;
  readonly query: PaymentQueryService;
  /** CSV and JSON Lines exports of the account's payments (GET /payment/export, the dashboard's). */
  readonly exports: PaymentExportService;
  readonly localSend: LocalSendService;
  readonly localReceive: LocalReceiveService;
  readonly verify: VerifyPaymentService;
  readonly tokens: TokenInfoService;
  readonly portfolio: PortfolioService;
  /** The built-in x402 facilitator; `start()` it before serving (it loads its fee-payer keys). */
  readonly facilitator: FacilitatorService;
  /** The facilitator's x402 `bazaar` catalogue (GET /facilitator/discovery/resources). */
  readonly discovery: DiscoveryCatalogue;
  /** The x402 `payment-identifier` extension on /facilitator/verify and /settle. */
  readonly paymentIdentifiers: PaymentIdentifiers;
  /** x402 payloads given to /transaction/receive; the reconciler watches their pending payments. */
  readonly x402Receipts: X402LocalReceiveService;
  /** Pays x402 sellers from custodial wallets (POST /payment/x402); the reconciler watches the payments. */
  readonly x402Pay: X402PayService;
  /** Reads and sets spend policies (admin-scoped keys, the CLI, the dashboard); SpendGuard enforces them. */
  readonly spendPolicies: SpendPolicyService;
  /** Refunds of received payments (POST /payment/refund), made by `send` or `localSend`. */
  readonly refunds: RefundService;
  /** What the account's payments add up to lately (GET /account/summary, the dashboard's home). */
  readonly summary: AccountSummaryService;
}

export interface ServiceParts {
  readonly store: Store;
  readonly networks: NetworkRegistry;
  readonly masterKey: Uint8Array;
  /** Names this process in payment leases. */
  readonly instanceId: string;
  readonly confirmTimeoutMs: number;
  readonly proofMaxAgeMs: number;
  readonly trustedProofKeys?: readonly PublishedKey[];
  /** How long an authenticated key is trusted without asking storage again; 0: never. */
  readonly authCacheMs?: number;
  /** Serve the embedded Solana localnet under devnet's id to x402 clients too (default true). */
  readonly x402LocalnetAsDevnet?: boolean;
  /** Where outbound calls to caller-chosen URLs (facilitatorUrl) may go; default: public addresses only. */
  readonly outbound?: OutboundPolicy;
  /** How much one send may move, per asset (SEND_AMOUNT_BOUNDS); default: DEFAULT_SEND_AMOUNT_BOUNDS. */
  readonly sendAmountBounds?: SendAmountBoundsTable;
  readonly now?: () => number;
  /** Told when payments confirm (the /metrics confirmation latency). */
  readonly confirmations?: ConfirmationObserver;
  /** The x402 facilitator's fee budget per account and its minimum settle amounts; defaults if absent. */
  readonly feeBudget?: FeeBudgetSettings;
  /** Told what each settlement's network fee cost its account (the /metrics sponsored fees). */
  readonly sponsoredFees?: SponsoredFeeObserver;
  /** The operator's hooks around the built-in facilitator's verify and settle (createGateway's facilitatorHooks). */
  readonly facilitatorHooks?: FacilitatorHooks;
  /** The bazaar catalogue's public listing and bound (X402_DISCOVERY_*); defaults if absent. */
  readonly discovery?: DiscoverySettings;
}

export function createServices(parts: ServiceParts): GatewayServices {
  const { store, networks } = parts;
  const now = parts.now ?? Date.now;
  const proofs = new PaymentProofs(parts.masterKey, parts.trustedProofKeys);
  const wallets = new WalletService(store, networks, new SecretBox(parts.masterKey), now);
  const ledger = new PaymentLedger(store, networks, now, parts.confirmations);
  const common = { store, networks, wallets, proofs, ledger, now };
  const verifier = new ProofVerifier({ ...common, proofMaxAgeMs: parts.proofMaxAgeMs });
  const builtInFacilitator = new FacilitatorService({
    store,
    networks,
    ledger,
    secrets: new SecretBox(parts.masterKey),
    settleWaitMs: parts.confirmTimeoutMs,
    localnetAsDevnet: parts.x402LocalnetAsDevnet ?? true,
    feeBudget: new FeeBudget(parts.feeBudget),
    ...(parts.sponsoredFees === undefined ? {} : { sponsoredFees: parts.sponsoredFees }),
    now,
  });
  // The operator's hooks around its verify and settle, when given (createGateway's facilitatorHooks).
  const facilitator = withFacilitatorHooks(builtInFacilitator, parts.facilitatorHooks);
  const x402 = new X402ReceiveService({
    store,
    facilitator,
    ledger,
    outbound: parts.outbound ?? { allowPrivate: false },
    now,
  });
  const x402Receipts = new X402LocalReceiveService({ store, facilitator, x402, ledger, now });
  const amountBounds = new SendAmountBounds(parts.sendAmountBounds);
  // Enforces spend policies on every custodial spend (send, x402 pay, local build).
  const spendGuard = new SpendGuard({ store, now });
  const send = new SendPaymentService({
    ...common,
    amountBounds,
    spendGuard,
    instanceId: parts.instanceId,
    confirmTimeoutMs: parts.confirmTimeoutMs,
  });
  const localSend = new LocalSendService({ ...common, amountBounds, spendGuard });
  return {
    accounts: new AccountService(store, now, parts.authCacheMs ?? 0),
    wallets,
    faucet: new FaucetService(networks),
    proofs,
    ledger,
    send,
    receive: new ReceivePaymentService({ ...common, verifier, x402 }),
    query: new PaymentQueryService(store, networks, wallets, now),
    exports: new PaymentExportService(store, networks, wallets, now),
    localSend,
    localReceive: new LocalReceiveService({ ...common, verifier, x402: x402Receipts }),
    verify: new VerifyPaymentService(verifier, x402, networks),
    tokens: new TokenInfoService(networks),
    portfolio: new PortfolioService(networks),
    facilitator,
    discovery: new DiscoveryCatalogue({
      repository: store.discovery,
      settings: parts.discovery ?? { publicListing: true, maxPerAccount: 1_000, maxAgeMs: 30 * 86_400_000 },
      now,
    }),
    // A request waits for another with its identifier at most as long as that one's settle may wait.
    paymentIdentifiers: new PaymentIdentifiers({
      idempotency: store.idempotency,
      waitMs: parts.confirmTimeoutMs + 10_000,
      now,
    }),
    x402Receipts,
    x402Pay: new X402PayService({
      store,
      wallets,
      networks,
      facilitator,
      ledger,
      spending: spendGuard,
      approvals: new Permit2ApprovalService({ store, wallets, ledger, instanceId: parts.instanceId, now }),
      now,
    }),
    spendPolicies: new SpendPolicyService({ store, networks, now }),
    summary: new AccountSummaryService({ store, networks, now }),
    refunds: new RefundService({ store, networks, send, localSend, now }),
  };
}
