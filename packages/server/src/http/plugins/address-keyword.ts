import type { FuncKeywordDefinition, SchemaValidateFunction } from 'ajv';
import { canonicalAddress } from '../../chains/canonical-address.ts';
import { isEvmAddress } from '../../domain/address.ts';

/**
 * The schema keyword that marks a field as an address: `{ type: 'string', 'x-address': true }`.
 * Validation rewrites an EVM address written in one letter case to its EIP-55 spelling in place, before the
 * handler sees it, so every service, every stored column and every answer has one spelling of an
 * address: a receive for `0xab…` and a history of `0xAb…` name the same wallet. One step at the edge
 * instead of a canonicalAddress call in every service that might forget it.
 *
 * A value that is not an EVM address is left as sent, for the route's own rules (a Solana address is
 * checked as base58 of 32 bytes where it is used, and what is no address keeps the answer each route
 * documents, e.g. INVALID_RECIPIENT). An EVM address in mixed case whose checksum is wrong is refused.
 */
export const ADDRESS_KEYWORD = 'x-address';

const BAD_CHECKSUM = 'mixes upper and lower case, but not as its EIP-55 checksum does (a typo?)';

/**
 * A recipient with a wrong checksum is refused by its route with the spec's INVALID_RECIPIENT, so it is
 * passed on as sent; any other address field is refused here, as a parameter.
 */
const REFUSED_BY_ROUTE = new Set(['recipientAddress']);

const validate: SchemaValidateFunction = (enabled: boolean, data: string, _parentSchema, context) => {
  validate.errors = [];
  if (!enabled || context === undefined || !isEvmAddress(data)) return true;
  const hex = data.slice(2);
  const canonical = canonicalAddress(data);
  if (hex !== hex.toLowerCase() && hex !== hex.toUpperCase() && canonical !== data) {
    // Mixed case claims an EIP-55 checksum; a wrong one is a typo, never "corrected" to some address.
    if (REFUSED_BY_ROUTE.has(String(context.parentDataProperty))) return true;
    validate.errors = [{ keyword: ADDRESS_KEYWORD, message: BAD_CHECKSUM, params: {} }];
    return false;
  }
  (context.parentData as Record<string | number, unknown>)[context.parentDataProperty] = canonical;
  return true;
};

export const addressKeyword: FuncKeywordDefinition = {
  keyword: ADDRESS_KEYWORD,
  type: 'string',
  schemaType: 'boolean',
  modifying: true,
  validate,
};

/** Options for a TypeBox string that is an address: `Type.String({ ...AddressOptions, … })`. */
export const ADDRESS_OPTIONS = { [ADDRESS_KEYWORD]: true } as const;
