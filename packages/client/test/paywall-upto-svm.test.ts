import { describeUptoPaywall, localnetUpto } from './support/upto-paywall.ts';

/**
 * protect() with an `upto` offer on the embedded localnet (under devnet's id, which stock buyers need):
 * a stock @x402/fetch buyer with @x402/svm's upto client signs the open of a payment channel of the
 * maximum; the paywall has the facilitator verify it and send it (the escrow deposit) before the handler
 * runs, and the handler's `payment.settle(amount)` claims what the request cost, the rest back to the
 * buyer in the same transaction. A maximum nobody claims comes back through the gateway's escrow sweep.
 * The assertions are the suite every upto chain runs (support/upto-paywall.ts).
 */
describeUptoPaywall('Solana', localnetUpto);
