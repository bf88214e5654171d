import type { ChainFamily } from './address.ts';

/** How long a challenge to prove control of an address may be answered. */
export const WALLET_CHALLENGE_TTL_MS = 10 * 60_000;

/** What a challenge states; the text signed is made from exactly this and nothing else. */
export interface WalletChallengeTerms {
  readonly accountId: string;
  readonly family: ChainFamily;
  /** Canonical spelling (EIP-55 on EVM). */
  readonly address: string;
  /** 32 hex characters of randomness: what makes the text unique, and how it is found again. */
  readonly nonce: string;
  readonly expiresAt: number;
}

const NONCE_LINE = /^Nonce: ([0-9a-f]{32})$/m;

/**
 * The text a wallet signs to prove it controls `address`. It names gate402, the purpose, the account
 * it registers the address for, the address, a random nonce and the expiry, so a signature of it proves
 * one thing only: this key agreed to be watched by this account, now. It is no transaction and moves
 * nothing, and a wallet shows it as it is (plain lines, no markup). Signed as UTF-8 bytes.
 */
export function walletChallengeText(terms: WalletChallengeTerms): string {
  return [
    'gate402: prove control of an address',
    '',
    `Sign this message to register ${terms.address} as a watch-only wallet of gate402 account ${terms.accountId}.`,
    'Signing moves no funds and costs nothing. Sign it only if you asked for it.',
    '',
    `Address: ${terms.address}`,
    `Chain: ${terms.family}`,
    `Account: ${terms.accountId}`,
    `Nonce: ${terms.nonce}`,
    `Expires: ${new Date(terms.expiresAt).toISOString()}`,
  ].join('\n');
}

/** The nonce a challenge text names, or undefined for text that is no challenge. */
export function walletChallengeNonce(text: string): string | undefined {
  return NONCE_LINE.exec(text)?.[1];
}
