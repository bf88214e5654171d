import type { ChainAdapter } from '../../chains/chain-adapter.ts';
import { chainFamily } from '../../chains/chain-families.ts';
import type { ExactScheme } from '../../chains/exact-scheme.ts';
import type { NetworkRegistry } from '../../chains/network-registry.ts';
import type { SchemeName, UptoScheme } from '../../chains/upto-scheme.ts';
import type { Store } from '../../store/store.ts';
import { v1NameOf } from '../../x402/network-names.ts';
import type { SecretBox } from '../custody/secret-box.ts';
import type { SupportedAnswer } from './facilitator-answers.ts';
import { FeePayerKeys } from './fee-payer-keys.ts';

/**
 * The chain and the scheme that serve one (network, scheme) pair. `upto` schemes speak ExactScheme's
 * methods with UptoScheme's amount rules; the service branches on `name`, never on a chain family.
 */
export type Route =
  | { readonly chain: ChainAdapter; readonly name: 'exact'; readonly scheme: ExactScheme }
  | { readonly chain: ChainAdapter; readonly name: 'upto'; readonly scheme: UptoScheme };

export interface FacilitatorRoutesDeps {
  readonly store: Store;
  readonly networks: NetworkRegistry;
  readonly secrets: SecretBox;
  /** Serve the embedded Solana localnet under devnet's CAIP-2 id too (stock @x402/svm clients know no other). */
  readonly localnetAsDevnet: boolean;
  readonly now: () => number;
  readonly log?: ((message: string) => void) | undefined;
}

/** Fee-payer balance the facilitator tops itself up to on local networks (SOL, ETH): 10 units. */
const LOCAL_FEE_PAYER_FUNDING = 10n;

/**
 * Which networks the built-in facilitator serves and with what: one route (chain + exact scheme + fee
 * payer) per configured network, set up at start, the embedded localnet also under devnet's id; and the
 * answer of GET /facilitator/supported drawn from them.
 */
export class FacilitatorRoutes {
  /** By network (CAIP-2, aliases included), then by scheme name. */
  private readonly routes = new Map<string, Map<SchemeName, Route>>();
  /** The public ids local chains also answer to; see localAliases. */
  private aliases: Map<string, ChainAdapter> | undefined;

  constructor(private readonly deps: FacilitatorRoutesDeps) {}

  /** The route of a network (CAIP-2, the devnet alias included) and scheme; undefined when none. */
  get(network: string, scheme: string = 'exact'): Route | undefined {
    return this.routes.get(network)?.get(scheme as SchemeName);
  }

  /** Loads (or creates) the fee-payer keys and sets up a scheme per network; funds them on local chains. */
  async start(): Promise<void> {
    const keys = new FeePayerKeys(this.deps.store, this.deps.secrets, this.deps.now);
    for (const chain of this.deps.networks.all()) {
      const family = chain.info.family;
      const key = await keys.ensure(family, () => chain.generateKeypair());
      // Only the tokens the configuration lists are settled, on either family (see the schemes).
      const assets = this.deps.networks.tokensOf(chain.info.id).map((t) => t.address);
      const scheme = await chainFamily(family).exactScheme(chain, key, assets, {
        now: this.deps.now,
        log: this.deps.log,
      });
      const schemes = new Map<SchemeName, Route>([['exact', { chain, name: 'exact', scheme }]]);
      const upto = await chainFamily(family).uptoScheme?.(chain, key, assets, {
        now: this.deps.now,
        log: this.deps.log,
      });
      if (upto !== undefined) schemes.set('upto', { chain, name: 'upto', scheme: upto });
      this.routes.set(chain.info.id, schemes);
      if (chain.info.isLocal && chain.faucet !== undefined) await this.fund(chain, key.address);
    }
    for (const [alias, local] of this.localAliases()) {
      const route = this.routes.get(local.info.id);
      if (route !== undefined) this.routes.set(alias, route);
    }
  }

  supported(): SupportedAnswer {
    const kinds: SupportedAnswer['kinds'] = [];
    const signers: Record<string, string[]> = {};
    const extensions = new Set<string>();
    for (const [network, schemes] of this.routes) {
      for (const route of schemes.values()) {
        const { scheme } = route;
        for (const extension of scheme.supportedExtensions?.() ?? []) extensions.add(extension);
        // `upto` only where the chain carries what it needs, as last looked (EVM: x402's upto proxy).
        if (route.name === 'upto' && !route.scheme.available()) continue;
        const extra = scheme.supportedExtra();
        const kind = (x402Version: number, name: string) =>
          kinds.push({
            x402Version,
            scheme: route.name,
            network: name,
            ...(extra === undefined ? {} : { extra }),
          });
        kind(2, network);
        // x402 v1 has `exact` only.
        const v1 = route.name === 'exact' ? v1NameOf(network) : undefined;
        if (v1 !== undefined) kind(1, v1);
        const family = chainFamily(scheme.family).signersNamespace;
        signers[family] = [...new Set([...(signers[family] ?? []), ...scheme.signers()])];
      }
    }
    return { kinds, extensions: [...extensions], signers };
  }

  /**
   * The x402 v1 name of a configured network (`solana-devnet`, `base-sepolia`), from the one table of v1
   * names (network-names.ts): the network's own, else that of the public network an embedded local
   * chain answers to (X402_LOCALNET_AS_DEVNET). Undefined when v1 has none (e.g. anvil's eip155:31337):
   * v1 clients cannot be offered `exact` there.
   */
  v1NetworkName(network: string): string | undefined {
    const own = v1NameOf(network);
    if (own !== undefined) return own;
    for (const [alias, chain] of this.localAliases()) {
      if (chain.info.id === network) return v1NameOf(alias);
    }
    return undefined;
  }

  /** The public ids a configured (local) network also answers to here: the localnet's devnet id, or none. */
  aliasesOf(network: string): string[] {
    return [...this.localAliases()].filter(([, chain]) => chain.info.id === network).map(([alias]) => alias);
  }

  /** The configured network (the devnet alias resolved) a payment is for; undefined when not served here. */
  chainOf(network: string | undefined): ChainAdapter | undefined {
    if (network === undefined) return undefined;
    const configured = this.deps.networks.get(network);
    if (configured !== undefined) return configured;
    return this.localAliases().get(network);
  }

  /**
   * The public ids embedded local chains also answer to (X402_LOCALNET_AS_DEVNET: the localnet as Solana
   * devnet, as its family says), unless the gateway serves that public network itself.
   */
  private localAliases(): Map<string, ChainAdapter> {
    // The networks are fixed for the gateway's life: worked out once, not on every verify and settle.
    if (this.aliases !== undefined) return this.aliases;
    const aliases = new Map<string, ChainAdapter>();
    this.aliases = aliases;
    if (!this.deps.localnetAsDevnet) return aliases;
    for (const chain of this.deps.networks.all()) {
      const alias = chainFamily(chain.info.family).localStandsInFor;
      if (!chain.info.isLocal || alias === undefined || this.deps.networks.get(alias) !== undefined) continue;
      if (!aliases.has(alias)) aliases.set(alias, chain);
    }
    return aliases;
  }

  /** This facilitator's Solana fee payer, which sellers name in `extra.feePayer`. */
  feePayerOf(network: string | undefined): string | undefined {
    const route = network === undefined ? undefined : this.get(network);
    return route !== undefined && chainFamily(route.scheme.family).sellersNameFeePayer
      ? route.scheme.signers()[0]
      : undefined;
  }

  private async fund(chain: ChainAdapter, address: string): Promise<void> {
    const unit = 10n ** BigInt(chain.info.nativeCurrency.decimals);
    const balance = await chain.getBalance(address);
    if (balance >= unit) return;
    await chain.faucet?.fundNative(address, LOCAL_FEE_PAYER_FUNDING * unit);
    this.deps.log?.(`x402 facilitator: fee payer ${address} funded on ${chain.info.name}`);
  }
}
