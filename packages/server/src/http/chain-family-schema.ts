import { type TLiteral, Type } from 'typebox';
import { CHAIN_FAMILIES } from '../domain/address.ts';

/** One literal schema per entry of a tuple of names, keeping each name's literal type. */
type Literals<Names extends readonly string[]> = { -readonly [K in keyof Names]: TLiteral<Names[K]> };

/** A chain family's name in a request or an answer: one literal per family the gateway speaks. */
export const CHAIN_FAMILY_SCHEMA = Type.Union(
  CHAIN_FAMILIES.map((family) => Type.Literal(family)) as Literals<typeof CHAIN_FAMILIES>,
);
