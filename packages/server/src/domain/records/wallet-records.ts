import type { ChainFamily } from '../address.ts';

// Wallets (custodial and watch-only) and the proof-of-control challenges of watch-only ones.

export interface WalletRecord {
  readonly id: string;
  readonly accountId: string;
  readonly family: ChainFamily;
  /** The CAIP-2 network it was created for; the key pair serves every network of its family. */
  readonly network: string | null;
  readonly address: string;
  /** An address the account controls elsewhere: it can receive, never send. */
  readonly watchOnly: boolean;
  /** The custodial secret key, sealed under the master key; null for watch-only wallets. */
  readonly encryptedSecret: string | null;
  readonly createdAt: number;
  /** The account's name for it (see wallet-label.ts); null: none. The only field that ever changes. */
  readonly label: string | null;
}

/** A gateway-issued text that the key of `address` signs to prove control of it (see wallet-challenge.ts). */
export interface WalletChallengeRecord {
  /** Random, in the text: the text finds its challenge by it. */
  readonly nonce: string;
  /** The only account that may answer it. */
  readonly accountId: string;
  readonly family: ChainFamily;
  /** Canonical spelling. */
  readonly address: string;
  /** The exact text to sign. */
  readonly message: string;
  readonly createdAt: number;
  readonly expiresAt: number;
  /** When it was answered (a wallet registered with it); a challenge is answered once. */
  readonly usedAt: number | null;
}
