import { anvilUpto, describeUptoPaywall } from './support/upto-paywall.ts';

/**
 * protect() with an `upto` offer on the embedded anvil: a stock @x402/fetch buyer with @x402/evm's upto
 * client signs a Permit2 permit of the maximum; the paywall has the facilitator verify it before the
 * handler runs, and the handler settles what the request cost with `payment.settle(amount)`. Nothing
 * moves before that settle. The assertions are the suite every upto chain runs (support/upto-paywall.ts).
 */
describeUptoPaywall('EVM', (seller) => anvilUpto(seller));
