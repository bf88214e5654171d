import type { Config } from '../config.ts';
import type { ChainFamily } from '../domain/address.ts';
import type { ChainAdapter } from './chain-adapter.ts';
import type { ExactScheme } from './exact-scheme.ts';
import type { RpcObserver } from './rpc-endpoints.ts';
import type { UptoScheme } from './upto-scheme.ts';

/** The chains of one family a gateway connected to (embedded or remote), and how to let go of them. */
export interface FamilyConnection {
  readonly adapters: readonly ChainAdapter[];
  close(): Promise<void>;
}

/**
 * How the CLI's faucet reaches this family's local chain from another process (where a running gateway
 * started it, or as configured): `connect` throws ChainError `unavailable` when nothing answers there.
 */
export interface FaucetChainPlan {
  /** For people: "local Solana chain", "local EVM chain (anvil)". */
  readonly where: string;
  readonly rpcUrl: string;
  connect(): Promise<{ readonly adapter: ChainAdapter; readonly tokensRefused: string | undefined }>;
}

/** A recipient a family's rules refuse, with the field's detail for the spec's error body. */
export interface RecipientProblem {
  readonly message: string;
  readonly detail: string;
}

/**
 * Everything the gateway knows of one chain family (Solana, EVM), in one module per family, registered
 * in chain-families.ts. Code outside chains/ asks a family for these rules and never branches on a
 * family's name: a new family is one new module and one line in the registry.
 */
export interface ChainFamilyModule<Settings = unknown> {
  readonly family: ChainFamily;
  /** Starts the embedded chain or connects the configured RPC endpoints of this family. */
  connect(
    settings: Settings,
    log: (message: string) => void,
    rpcObserver?: RpcObserver,
  ): Promise<FamilyConnection>;
  /** How error messages name an address of this family: "a Solana address", "an EVM address". */
  readonly addressName: string;
  /** What a caller of a send can expect, from the family's block times. */
  readonly estimatedConfirmation: string;
  /** The name of the program or system account `address` is; undefined for an address that can be a wallet. */
  reservedAccount(address: string): string | undefined;
  /** Why `address` (already of this family) must not be paid, beyond being reserved; undefined when fine. */
  recipientProblem(address: string): RecipientProblem | undefined;
  /** Whether `text` is a transaction id as this family writes one (a signature, a hash). */
  isTransactionId(text: string): boolean;
  /**
   * The x402 `exact` scheme on `chain`, paying fees with `feePayer` and settling only `assets`, with its
   * start-up done (EVM: whether the chain carries Permit2 and x402's proxy; a chain that does not answer
   * now is served without that offer rather than holding the gateway's start).
   */
  exactScheme(
    chain: ChainAdapter,
    feePayer: { readonly address: string; readonly secretKey: Uint8Array },
    assets: readonly string[],
    options: { readonly now: () => number; readonly log?: ((message: string) => void) | undefined },
  ): Promise<ExactScheme>;
  /**
   * The x402 `upto` scheme on `chain` (sign a maximum, settle the actual amount), with its start-up done;
   * undefined where the family (or the chain) has none. Absent: the family offers no `upto`.
   */
  uptoScheme?(
    chain: ChainAdapter,
    feePayer: { readonly address: string; readonly secretKey: Uint8Array },
    assets: readonly string[],
    options: { readonly now: () => number; readonly log?: ((message: string) => void) | undefined },
  ): Promise<UptoScheme | undefined>;
  /** The CAIP-2 namespace of this family's network ids (`solana`, `eip155`). */
  readonly caip2Namespace: string;
  /** The CAIP-2 wildcard under which GET /facilitator/supported lists this family's signers. */
  readonly signersNamespace: string;
  /**
   * The public network id this family's embedded local chain may also answer to (X402_LOCALNET_AS_DEVNET),
   * for stock x402 buyers that accept only public ids: Solana devnet. Undefined when there is none.
   */
  readonly localStandsInFor: string | undefined;
  /**
   * Whether an `exact` buyer signs over the token's EIP-712 domain, named in the requirements' `extra`
   * (`{name, version}`); an x402 v1 payload does not repeat its requirements, so it is rebuilt from the token.
   */
  readonly signsTokenDomain: boolean;
  /** Where a person can look at transaction `id` on the network with CAIP-2 `reference`; undefined for none. */
  explorerTransactionUrl(reference: string, id: string): string | undefined;
  /** Whether sellers name the facilitator's fee payer in `extra.feePayer` (Solana), so it is published. */
  readonly sellersNameFeePayer: boolean;
  /**
   * Where the CLI's faucet finds this family's local chain; throws the spec's error (or a ConfigError)
   * when the configuration rules the faucet out there.
   */
  faucetChain(config: Config): FaucetChainPlan;
  /** The faucet's explanation when the chain refuses a native top-up to `address`, by field. */
  faucetNativeRefusal(symbol: string): Readonly<Record<string, string>>;
}
