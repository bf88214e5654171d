import { randomBytes } from 'node:crypto';
import { MESSAGE_SIGNATURE_VERIFIERS } from '../../chains/message-signatures.ts';
import type { ChainFamily } from '../../domain/address.ts';
import { GatewayError } from '../../domain/gateway-error.ts';
import type { WalletChallengeRecord } from '../../domain/records/wallet-records.ts';
import {
  WALLET_CHALLENGE_TTL_MS,
  walletChallengeNonce,
  walletChallengeText,
} from '../../domain/wallet-challenge.ts';
import type { Store } from '../../store/store.ts';

/** Expired challenges are kept this long, so a late answer is told "expired" rather than "unknown". */
const EXPIRED_KEPT_MS = 86_400_000;

export interface IssuedChallenge {
  /** The exact text to sign (UTF-8). */
  readonly challenge: string;
  readonly chain: ChainFamily;
  readonly address: string;
  readonly expiresAt: number;
}

/** How each family's signature is made, for messages that tell a caller what to send. */
const SIGNATURE_FORM: Record<ChainFamily, string> = {
  solana: 'an ed25519 signature of the challenge text (UTF-8) by this address, base58, base64 or hex',
  evm: 'an EIP-191 personal_sign signature of the challenge text by this address (0x…, 65 bytes)',
};

/**
 * Proof that an account controls an address before the address becomes its watch-only wallet: without
 * it, anyone could register a seller's external payTo first and be recorded as the one paid.
 *
 * The gateway issues a text naming the account, the address, a nonce and an expiry; the address's key
 * signs it; the signature is checked here, offline. A challenge answers for one account and one
 * address, once, within 10 minutes.
 */
export class WalletChallenges {
  constructor(
    private readonly store: Store,
    private readonly now: () => number,
  ) {}

  /** A new challenge for `address` (canonical) of `family`, for `accountId` only. */
  async issue(accountId: string, family: ChainFamily, address: string): Promise<IssuedChallenge> {
    const now = this.now();
    await this.store.walletChallenges.deleteExpired(now - EXPIRED_KEPT_MS);
    const nonce = randomBytes(16).toString('hex');
    const expiresAt = now + WALLET_CHALLENGE_TTL_MS;
    const message = walletChallengeText({ accountId, family, address, nonce, expiresAt });
    await this.store.walletChallenges.insert({
      nonce,
      accountId,
      family,
      address,
      message,
      createdAt: now,
      expiresAt,
      usedAt: null,
    });
    return { challenge: message, chain: family, address, expiresAt };
  }

  /**
   * The challenge `text` answered by `signature`, checked for this account and address: refused with
   * the reason otherwise. It is not marked used here: the caller does that (markUsed) in the
   * transaction that registers the wallet, so a refused registration leaves it answerable.
   */
  async check(
    accountId: string,
    family: ChainFamily,
    address: string,
    text: string,
    signature: string,
  ): Promise<WalletChallengeRecord> {
    const nonce = walletChallengeNonce(text);
    const challenge = nonce === undefined ? undefined : await this.store.walletChallenges.get(nonce);
    // The stored text is the one that must be signed; one edited on the way is not that challenge.
    if (challenge === undefined || normalised(text) !== challenge.message) {
      throw new GatewayError('INVALID_CHALLENGE', {
        details: {
          challenge:
            'is not a challenge this gateway issued; send the text POST /wallets/challenge answered, unchanged',
        },
      });
    }
    if (challenge.accountId !== accountId) {
      throw new GatewayError('CHALLENGE_ACCOUNT_MISMATCH', {
        details: { challenge: 'was issued to another account; ask for your own' },
      });
    }
    if (challenge.family !== family || challenge.address !== address) {
      throw new GatewayError('CHALLENGE_ADDRESS_MISMATCH', {
        details: { address: `is not the address this challenge was issued for (${challenge.address})` },
      });
    }
    if (challenge.usedAt !== null) {
      throw new GatewayError('CHALLENGE_ALREADY_USED', {
        details: { challenge: 'was already answered; ask for a new one' },
      });
    }
    if (this.now() >= challenge.expiresAt) {
      throw new GatewayError('CHALLENGE_EXPIRED', {
        details: {
          challenge: `expired at ${new Date(challenge.expiresAt).toISOString()}; ask for a new one`,
        },
      });
    }
    // The text as issued, or as a file holds it (`gate402 wallets challenge > file` ends it with a
    // newline, and a signing tool signs the file's bytes): the same words either way.
    const verify = MESSAGE_SIGNATURE_VERIFIERS[family];
    const signed =
      (await verify(address, challenge.message, signature)) ||
      (await verify(address, `${challenge.message}\n`, signature));
    if (!signed) {
      throw new GatewayError('INVALID_SIGNATURE', {
        details: { signature: `is not ${SIGNATURE_FORM[family]}` },
      });
    }
    return challenge;
  }
}

/** Line endings as issued (\n; a form or a terminal may turn them into \r\n) and no trailing blank. */
function normalised(text: string): string {
  return text.replaceAll('\r\n', '\n').trimEnd();
}
