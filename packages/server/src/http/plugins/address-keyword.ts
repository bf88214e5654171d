import type { KeywordDefinition } from 'ajv';
import { canonicalAddress } from '../../chains/canonical-address.ts';

/**
 * The schema keyword that marks a field as an address: `{ type: 'string', 'x-address': true }`.
 * Validation rewrites an EVM address in any letter case to its EIP-55 spelling in place, before the
 * handler sees it, so every service, every stored column and every answer has one spelling of an
 * address: a receive for `0xab…` and a history of `0xAb…` name the same wallet. One step at the edge
 * instead of a canonicalAddress call in every service that might forget it.
 *
 * It refuses nothing: a value that is not an EVM address is left as sent, for the route's own rules
 * (a Solana address is checked as base58 of 32 bytes where it is used, and what is no address keeps
 * the answer each route documents, e.g. INVALID_RECIPIENT).
 */
export const ADDRESS_KEYWORD = 'x-address';

export const addressKeyword: KeywordDefinition = {
  keyword: ADDRESS_KEYWORD,
  type: 'string',
  schemaType: 'boolean',
  modifying: true,
  errors: false,
  validate(enabled: boolean, data: string, _parent, context) {
    if (!enabled || context === undefined) return true;
    const canonical = canonicalAddress(data);
    if (canonical !== data)
      (context.parentData as Record<string | number, unknown>)[context.parentDataProperty] = canonical;
    return true;
  },
};

/** Options for a TypeBox string that is an address: `Type.String({ ...AddressOptions, … })`. */
export const ADDRESS_OPTIONS = { [ADDRESS_KEYWORD]: true } as const;
