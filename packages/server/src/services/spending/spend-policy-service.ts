import { canonicalAddress } from '../../chains/canonical-address.ts';
import type { NetworkRegistry } from '../../chains/network-registry.ts';
import { addressFamily } from '../../domain/address.ts';
import { GatewayError, invalidParameters } from '../../domain/gateway-error.ts';
import { AmountError, atomicToDecimalText, decimalTextToAtomic } from '../../domain/money.ts';
import type { AssetLimitRecord, SpendPolicyRecord } from '../../domain/records/spend-policy-records.ts';
import type { Store } from '../../store/store.ts';
import { statedAsset } from '../payments/payment-asset.ts';
import { normalisedHostEntry } from './allowed-hosts.ts';
import { SPEND_WINDOW_MS } from './spend-guard.ts';

/** Bounds on one policy, so a policy stays a small row read on every spend. */
export const MAX_POLICY_LIMITS = 50;
export const MAX_POLICY_LIST_ENTRIES = 200;

/**
 * A policy as set through the API, the CLI and the dashboard. Every field absent or null: no rule of
 * that kind. Amounts are decimal text in the asset's units ("2.5" USDC), converted exactly.
 */
export interface SpendPolicyInput {
  readonly limits?:
    | readonly {
        readonly network: string;
        /** A symbol GET /networks lists for the network, or a token address; absent: the native currency. */
        readonly asset?: string | undefined;
        readonly maxPerPayment?: string | null | undefined;
        readonly maxPerDay?: string | null | undefined;
      }[]
    | null
    | undefined;
  readonly allowedRecipients?: readonly string[] | null | undefined;
  readonly allowedHosts?: readonly string[] | null | undefined;
  readonly allowedNetworks?: readonly string[] | null | undefined;
  /** ISO 8601 date-time; from then on the policy allows no spend. */
  readonly expiresAt?: string | null | undefined;
}

/** A policy as every answer shows it. */
export interface SpendPolicyView {
  /** `account`: binds every spend of the account; `key`: binds the spends of `keyId` on top. */
  readonly scope: 'account' | 'key';
  readonly keyId: string | null;
  readonly limits:
    | {
        readonly network: string;
        /** The symbol it was set with, or the token address; the native currency's symbol for native. */
        readonly asset: string;
        /** Null for the native currency. */
        readonly assetAddress: string | null;
        readonly decimals: number;
        readonly maxPerPayment: string | null;
        readonly maxPerDay: string | null;
      }[]
    | null;
  readonly allowedRecipients: string[] | null;
  readonly allowedHosts: string[] | null;
  readonly allowedNetworks: string[] | null;
  readonly expiresAt: string | null;
  readonly updatedAt: number;
}

/** What a daily cap has left now, for the caller's own view. */
export interface DailyUsageView {
  readonly scope: 'account' | 'key';
  readonly network: string;
  readonly asset: string;
  readonly maxPerDay: string;
  readonly spent: string;
  readonly remaining: string;
}

export interface SpendPolicyServiceDeps {
  readonly store: Store;
  readonly networks: NetworkRegistry;
  readonly now?: () => number;
}

/**
 * Reads and sets the spend policies SpendGuard enforces. Who may call what is decided at the doors
 * (the access policy's `admin` scope for API keys; the account owner's dashboard session); this service
 * only keeps one account's policies apart from another's: a key of another account is NOT_FOUND, the
 * same answer as a key that does not exist, so nothing about it shows.
 */
export class SpendPolicyService {
  private readonly now: () => number;

  constructor(private readonly deps: SpendPolicyServiceDeps) {
    this.now = deps.now ?? Date.now;
  }

  async list(accountId: string): Promise<SpendPolicyView[]> {
    return (await this.deps.store.spending.listPolicies(accountId)).map(toView);
  }

  /** The policy of the account (keyId null) or of one of its keys; NOT_FOUND when none is set. */
  async get(accountId: string, keyId: string | null): Promise<SpendPolicyView> {
    if (keyId !== null) await this.ownKey(accountId, keyId);
    const policy = await this.deps.store.spending.getPolicy(accountId, keyId);
    if (policy === undefined) {
      throw new GatewayError('NOT_FOUND', {
        message:
          keyId === null ? 'The account has no spend policy.' : `API key ${keyId} has no spend policy.`,
      });
    }
    return toView(policy);
  }

  /** Sets (replaces) the policy of the account (keyId null) or of one of its keys. */
  async set(accountId: string, keyId: string | null, input: SpendPolicyInput): Promise<SpendPolicyView> {
    if (keyId !== null) await this.ownKey(accountId, keyId);
    const at = this.now();
    const existing = await this.deps.store.spending.getPolicy(accountId, keyId);
    const policy: SpendPolicyRecord = {
      accountId,
      keyId,
      limits: await this.validLimits(input.limits),
      allowedRecipients: validRecipients(input.allowedRecipients),
      allowedHosts: validHosts(input.allowedHosts),
      allowedNetworks: this.validNetworks(input.allowedNetworks),
      expiresAt: validExpiry(input.expiresAt),
      createdAt: existing?.createdAt ?? at,
      updatedAt: at,
    };
    await this.deps.store.spending.putPolicy(policy);
    return toView(policy);
  }

  /** Removes the policy; NOT_FOUND when there was none. */
  async remove(accountId: string, keyId: string | null): Promise<void> {
    if (keyId !== null) await this.ownKey(accountId, keyId);
    if (!(await this.deps.store.spending.deletePolicy(accountId, keyId))) {
      throw new GatewayError('NOT_FOUND', {
        message:
          keyId === null ? 'The account has no spend policy.' : `API key ${keyId} has no spend policy.`,
      });
    }
  }

  /**
   * What binds the spends of `keyId` (null: a dashboard session): the account's policy and the key's,
   * and what each daily cap has left in the rolling day. Any key may read its own: an agent can see its
   * limits, never change them.
   */
  async effective(
    accountId: string,
    keyId: string | null,
  ): Promise<{ policies: SpendPolicyView[]; daily: DailyUsageView[] }> {
    const policies = await this.deps.store.spending.policiesFor(accountId, keyId);
    const since = this.now() - SPEND_WINDOW_MS;
    const daily: DailyUsageView[] = [];
    for (const policy of policies) {
      for (const limit of policy.limits ?? []) {
        if (limit.maxPerDay === null) continue;
        const spends = await this.deps.store.spending.spentSince(
          accountId,
          limit.network,
          limit.asset,
          since,
        );
        const spent = spends
          .filter((s) => policy.keyId === null || s.keyId === policy.keyId)
          .reduce((sum, s) => sum + s.amount, 0n);
        const remaining = limit.maxPerDay > spent ? limit.maxPerDay - spent : 0n;
        daily.push({
          scope: policy.keyId === null ? 'account' : 'key',
          network: limit.network,
          asset: assetName(limit),
          maxPerDay: atomicToDecimalText(limit.maxPerDay, limit.decimals),
          spent: atomicToDecimalText(spent, limit.decimals),
          remaining: atomicToDecimalText(remaining, limit.decimals),
        });
      }
    }
    return { policies: policies.map(toView), daily };
  }

  private async ownKey(accountId: string, keyId: string): Promise<void> {
    const key = await this.deps.store.apiKeys.get(keyId);
    if (key === undefined || key.accountId !== accountId) {
      throw new GatewayError('NOT_FOUND', { message: `No API key ${keyId}.` });
    }
  }

  private async validLimits(input: SpendPolicyInput['limits']): Promise<AssetLimitRecord[] | null> {
    if (input === undefined || input === null) return null;
    if (input.length > MAX_POLICY_LIMITS) {
      throw invalidParameters({ limits: `must list at most ${MAX_POLICY_LIMITS} assets` });
    }
    const limits: AssetLimitRecord[] = [];
    for (const [index, entry] of input.entries()) {
      const field = `limits[${index}]`;
      const chain = this.deps.networks.get(entry.network);
      if (chain === undefined) {
        throw invalidParameters({
          [`${field}.network`]: 'is not a network this gateway serves (GET /networks)',
        });
      }
      const asset = await statedAsset(this.deps.networks, chain, entry.asset, `${field}.asset`);
      const address = asset.address === null ? null : canonicalAddress(asset.address);
      if (limits.some((l) => l.network === chain.info.id && l.asset === address)) {
        throw invalidParameters({ [`${field}.asset`]: 'is listed twice for this network' });
      }
      limits.push({
        network: chain.info.id,
        asset: address,
        symbol: asset.symbol,
        decimals: asset.decimals,
        maxPerPayment: atomicLimit(entry.maxPerPayment, asset.decimals, `${field}.maxPerPayment`),
        maxPerDay: atomicLimit(entry.maxPerDay, asset.decimals, `${field}.maxPerDay`),
      });
    }
    return limits;
  }

  private validNetworks(input: readonly string[] | null | undefined): string[] | null {
    if (input === undefined || input === null) return null;
    checkListSize('allowedNetworks', input);
    return [
      ...new Set(
        input.map((network, index) => {
          if (this.deps.networks.get(network) === undefined) {
            throw invalidParameters({
              [`allowedNetworks[${index}]`]: 'is not a network this gateway serves (GET /networks)',
            });
          }
          return network;
        }),
      ),
    ];
  }
}

function atomicLimit(text: string | null | undefined, decimals: number, field: string): bigint | null {
  if (text === undefined || text === null) return null;
  try {
    return decimalTextToAtomic(text.trim(), decimals);
  } catch (error) {
    if (error instanceof AmountError) {
      throw invalidParameters({ [field]: `must be a decimal amount such as "2.5" (${error.message})` });
    }
    throw error;
  }
}

function validRecipients(input: readonly string[] | null | undefined): string[] | null {
  if (input === undefined || input === null) return null;
  checkListSize('allowedRecipients', input);
  return [
    ...new Set(
      input.map((text, index) => {
        const address = text.trim();
        if (addressFamily(address) === undefined) {
          throw invalidParameters({
            [`allowedRecipients[${index}]`]: 'must be a Solana (base58) or EVM (0x…) address',
          });
        }
        return canonicalAddress(address);
      }),
    ),
  ];
}

function validHosts(input: readonly string[] | null | undefined): string[] | null {
  if (input === undefined || input === null) return null;
  checkListSize('allowedHosts', input);
  return [
    ...new Set(
      input.map((entry, index) => {
        const host = normalisedHostEntry(entry);
        if (host === undefined) {
          throw invalidParameters({
            [`allowedHosts[${index}]`]: 'must be a host name such as api.example.com, or *.example.com',
          });
        }
        return host;
      }),
    ),
  ];
}

function validExpiry(input: string | null | undefined): number | null {
  if (input === undefined || input === null) return null;
  const at = Date.parse(input);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(input) || Number.isNaN(at)) {
    throw invalidParameters({ expiresAt: 'must be an ISO 8601 date-time such as 2026-12-31T23:59:59Z' });
  }
  return at;
}

function checkListSize(field: string, list: readonly unknown[]): void {
  if (list.length > MAX_POLICY_LIST_ENTRIES) {
    throw invalidParameters({ [field]: `must list at most ${MAX_POLICY_LIST_ENTRIES} entries` });
  }
}

function assetName(limit: AssetLimitRecord): string {
  return limit.symbol ?? limit.asset ?? 'native';
}

export function toView(policy: SpendPolicyRecord): SpendPolicyView {
  return {
    scope: policy.keyId === null ? 'account' : 'key',
    keyId: policy.keyId,
    limits:
      policy.limits?.map((limit) => ({
        network: limit.network,
        asset: assetName(limit),
        assetAddress: limit.asset,
        decimals: limit.decimals,
        maxPerPayment:
          limit.maxPerPayment === null ? null : atomicToDecimalText(limit.maxPerPayment, limit.decimals),
        maxPerDay: limit.maxPerDay === null ? null : atomicToDecimalText(limit.maxPerDay, limit.decimals),
      })) ?? null,
    allowedRecipients: copy(policy.allowedRecipients),
    allowedHosts: copy(policy.allowedHosts),
    allowedNetworks: copy(policy.allowedNetworks),
    expiresAt: policy.expiresAt === null ? null : new Date(policy.expiresAt).toISOString(),
    updatedAt: policy.updatedAt,
  };
}

function copy(list: readonly string[] | null): string[] | null {
  return list === null ? null : [...list];
}
