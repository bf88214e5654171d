// Reading JSON-RPC params the way Agave's serde types do: positional array, an optional config
// object last, and -32602 errors for anything of the wrong shape.
import type { Commitment } from '../chain/chain.ts';
import { decodeBase58, decodeBase58Key } from '../wire/base58.ts';
import { invalidParams, invalidParamValue } from './rpc-error.ts';

export type Params = readonly unknown[];

export type Config = Readonly<Record<string, unknown>>;

export function config(params: Params, index: number): Config {
  const value = params[index];
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw invalidParams(`Invalid params: invalid type: ${describe(value)}, expected struct config.`);
  }
  return value as Config;
}

export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'sequence';
  if (typeof value === 'string') return `string "${value.slice(0, 64)}"`;
  if (typeof value === 'object') return 'map';
  return `${typeof value} \`${String(value)}\``;
}

export function stringParam(params: Params, index: number, what: string): string {
  const value = params[index];
  if (typeof value !== 'string') {
    throw invalidParams(
      value === undefined
        ? `Invalid params: missing field \`${what}\`.`
        : `Invalid params: invalid type: ${describe(value)}, expected a string.`,
    );
  }
  return value;
}

/** A base58 public key (Agave's `verify_pubkey`). */
export function pubkeyParam(params: Params, index: number, what = 'pubkey'): Uint8Array {
  return pubkey(stringParam(params, index, what));
}

export function pubkey(text: string): Uint8Array {
  const bytes = decodeBase58Key(text);
  if (!bytes) throw invalidParamValue();
  return bytes;
}

/** A base58 signature (Agave's `verify_signature`). */
export function signature(text: unknown): string {
  if (typeof text !== 'string' || text.length > 88) throw invalidParamValue();
  const bytes = decodeBase58(text);
  if (bytes?.length !== 64) throw invalidParamValue();
  return text;
}

/** A non-negative integer that fits a JSON number exactly (u64 params in practice here). */
export function integer(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw invalidParams(`Invalid params: invalid type: ${describe(value)}, expected ${what}.`);
  }
  return value;
}

const COMMITMENTS: Readonly<Record<string, Commitment>> = {
  processed: 'processed',
  confirmed: 'confirmed',
  finalized: 'finalized',
  // Deprecated names Agave still accepts.
  recent: 'processed',
  single: 'confirmed',
  singleGossip: 'confirmed',
  root: 'finalized',
  max: 'finalized',
};

/** The commitment in `cfg` (Agave's default: finalized). */
export function commitment(cfg: Config): Commitment {
  const value = cfg.commitment;
  if (value === undefined || value === null) return 'finalized';
  const found = typeof value === 'string' ? COMMITMENTS[value] : undefined;
  if (!found) {
    throw invalidParams(
      `Invalid params: unknown variant \`${String(value)}\`, expected one of \`processed\`, \`confirmed\`, \`finalized\`.`,
    );
  }
  return found;
}

export function optionalInteger(cfg: Config, key: string): number | undefined {
  const value = cfg[key];
  return value === undefined || value === null ? undefined : integer(value, 'u64');
}

export function encodingParam<T extends string>(cfg: Config, allowed: readonly T[], fallback: T): T {
  const value = cfg.encoding;
  if (value === undefined || value === null) return fallback;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  throw invalidParams(
    `Invalid params: unknown variant \`${String(value)}\`, expected one of ${allowed.map((a) => `\`${a}\``).join(', ')}.`,
  );
}
