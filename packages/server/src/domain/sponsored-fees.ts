/**
 * Network fees the built-in x402 facilitator's fee payer pays on behalf of an account (the seller whose
 * key asked to settle), kept per account, network and UTC day against a budget.
 */

/**
 * Default daily budget per account, in whole units of the native currency, by family. Solana: a stock
 * @x402/svm payment sets 20,000 compute units at 1 micro-lamport and has two signatures, so its fee is
 * 2 × 5,000 + 1 = 10,001 lamports; 1,000 of them are 0.010001 SOL, rounded up with 10 % headroom. EVM:
 * the facilitator reserves its gas limit (1.2 × the estimate: ~92,000 gas for a USDC
 * transferWithAuthorization that uses ~76,000) times the max fee it bids; 1,000 settlements of 100,000
 * gas at 2 gwei — an ordinary max fee on anvil and on a quiet L1 — are 0.2 ETH (L2s such as Base bid
 * a hundredth of that, so there it covers far more; name the network to set its own).
 */
export const DEFAULT_FEE_BUDGET: Readonly<Record<string, string>> = { solana: '0.011', evm: '0.2' };

/** Default X402_UPTO_MAX_OPEN_CHANNELS: escrow deposits not yet claimed, per account and network. */
export const DEFAULT_MAX_OPEN_UPTO_CHANNELS = 100;

/**
 * Default X402_UPTO_MAX_CHANNEL_RENT, whole SOL per account and network: the fee payer's rent one
 * account's payment channels may hold. A claimed channel holds its account's ~0.0027 SOL until the sweep
 * reclaims it (1,500 slots after its open, ~10 min on mainnet), so 1 SOL lets ~370 claimed upto requests
 * through per reclaim window (~0.6 a second) — far more than the default daily fee budget pays for
 * (~700 upto requests a day) — or ~210 deposits nobody claimed.
 */
export const DEFAULT_MAX_UPTO_CHANNEL_RENT = '1';

/**
 * Default X402_MAX_UNSETTLED_APPROVAL_FUNDINGS: funded buyer approvals (erc20ApprovalGasSponsoring) per
 * account, network and UTC day whose settlement has not settled. Each can lose at most one approval's
 * gas (100,000 gas at 3 × the network fee) and a 21,000-gas transfer; 20 of them at 2 gwei are ~0.013
 * ETH, well within the default EVM fee budget.
 */
export const DEFAULT_MAX_UNSETTLED_APPROVAL_FUNDINGS = 20;

/**
 * Default smallest payment settled, in whole units, by token symbol: a tenth of a cent in USDC, about
 * what the network fee of one Solana settlement costs — below it the fee payer pays more than moves.
 */
export const DEFAULT_MIN_SETTLE_AMOUNT: Readonly<Record<string, string>> = { USDC: '0.001' };

const DAY_MS = 86_400_000;

/** The UTC day of `at` (Unix ms), `YYYY-MM-DD`: the budget a fee is charged to. */
export function feeDayOf(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}

/** Whole seconds from `at` until the next UTC day begins (at least 1): when a spent budget is new again. */
export function secondsUntilNextFeeDay(at: number): number {
  const next = (Math.floor(at / DAY_MS) + 1) * DAY_MS;
  return Math.max(1, Math.ceil((next - at) / 1000));
}
