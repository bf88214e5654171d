import { canonicalAddress } from '../../chains/canonical-address.ts';
import { invalidParameters } from '../../domain/gateway-error.ts';
import { atomicToDecimalText, decimalTextToAtomic } from '../../domain/money.ts';
import { DEFAULT_SEND_AMOUNT_BOUNDS, type SendAmountBoundsTable } from '../../domain/send-amount-bounds.ts';
import { atomicFromField } from './amounts.ts';
import type { PaymentAsset } from './payment-asset.ts';

/** What the request schema lets through (whole units): the bound of an asset the table does not name. */
export const MAX_SEND_AMOUNT = 1_000_000_000;

/**
 * How much one send (POST /payment/send, /transaction/send) may move, per asset: the table's entry for
 * the token's address, else for its symbol (any case), else at least one atomic unit and at most
 * MAX_SEND_AMOUNT whole units.
 */
export class SendAmountBounds {
  private readonly bySymbol = new Map<string, readonly [string, string]>();
  private readonly byAddress = new Map<string, readonly [string, string]>();

  constructor(table: SendAmountBoundsTable = DEFAULT_SEND_AMOUNT_BOUNDS) {
    for (const [key, bounds] of Object.entries(table)) {
      // Symbols are short words; addresses are long (base58 32 bytes, or 0x and 40 hex digits).
      if (key.length > 20) this.byAddress.set(canonicalAddress(key), bounds);
      else this.bySymbol.set(key.toUpperCase(), bounds);
    }
  }

  /**
   * `amount` (whole units of `asset`, the `amount` field) in atomic units, or INVALID_PARAMETERS naming
   * `amount`: more decimals than the asset has, or outside its bounds.
   */
  atomicAmount(amount: number, asset: PaymentAsset): bigint {
    const symbol = asset.symbol ?? 'the token';
    const atomic = atomicFromField('amount', amount, asset.decimals, symbol);
    const bounds =
      (asset.address === null ? undefined : this.byAddress.get(canonicalAddress(asset.address))) ??
      (asset.symbol === null ? undefined : this.bySymbol.get(asset.symbol.toUpperCase()));
    const [least, most] =
      bounds === undefined
        ? [1n, BigInt(MAX_SEND_AMOUNT) * 10n ** BigInt(asset.decimals)]
        : [decimalTextToAtomic(bounds[0], asset.decimals), decimalTextToAtomic(bounds[1], asset.decimals)];
    if (atomic < least || atomic > most) {
      // The native currency keeps the spec's wording; a token says which one the bounds are of.
      const unit = asset.address === null ? '' : ` ${asset.symbol ?? `of ${asset.address}`}`;
      throw invalidParameters({
        amount: `must be between ${atomicToDecimalText(least, asset.decimals)} and ${atomicToDecimalText(most, asset.decimals)}${unit}`,
      });
    }
    return atomic;
  }
}
