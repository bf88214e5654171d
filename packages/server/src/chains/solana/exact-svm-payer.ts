import { createKeyPairSignerFromBytes } from '@solana/kit';
import type { SchemeNetworkClient } from '@x402/core/types';
import { isSolanaAddress } from '../../domain/address.ts';
import type { ChainAdapter } from '../chain-adapter.ts';
import type { ExactPayer, ExactPaymentRequest, SignedExactPayment } from '../exact-payer.ts';
import { stockPayload } from '../stock-payload.ts';
import { SOLANA_DEVNET_ID } from './solana-clusters.ts';

/** A blockhash is valid for 150 blocks: the latest a transaction signed now can land. */
const BLOCKHASH_VALIDITY_BLOCKS = 150n;

/**
 * x402 `exact` on Solana, buyer side (see ExactPayer): the stock `@x402/svm` client builds the
 * transferChecked transaction with the seller's fee payer and signs it as the transfer authority, on
 * the chain's own RPC endpoint (a local chain answers under devnet's id).
 */
export function exactSvmPayer(chain: ChainAdapter): ExactPayer {
  return {
    family: 'solana',
    refusal(requirement, wallet) {
      const extra = requirement.extra as Record<string, unknown> | undefined;
      const feePayer = extra?.feePayer;
      if (typeof feePayer !== 'string' || !isSolanaAddress(feePayer)) {
        return 'extra.feePayer must name the facilitator that pays the network fee (a Solana address)';
      }
      if (feePayer === wallet) {
        return 'extra.feePayer is the paying wallet itself: it would sign a complete transaction anyone could send';
      }
      return undefined;
    },
    async sign(input: ExactPaymentRequest, secretKey: Uint8Array): Promise<SignedExactPayment> {
      // WebCrypto keeps its own copy, not extractable; the caller zeroes `secretKey`.
      const signer = await createKeyPairSignerFromBytes(secretKey);
      const config = { rpcUrl: chain.info.rpcUrl };
      // Loaded when first used: a gateway that never pays an x402 seller does not load the buyer scheme.
      const scheme: SchemeNetworkClient =
        input.x402Version === 1
          ? new (await import('@x402/svm/v1')).ExactSvmSchemeV1(signer, config)
          : new (await import('@x402/svm/exact/client')).ExactSvmScheme(signer, config);
      const made = await stockPayload(scheme, {
        ...input,
        requirement: knownNetwork(ownLifetime(input.requirement), chain),
      });
      // The payload names the requirement the seller offered, as it offered it (sellers match on it):
      // v2 repeats it whole as `accepted`, v1 its network.
      const paymentPayload: Record<string, unknown> = {
        ...made,
        ...('accepted' in made ? { accepted: input.requirement } : {}),
        ...('network' in made ? { network: input.requirement.network } : {}),
      };
      // Asked after signing: the blockhash the client took is no newer, so this bound is never early.
      const height = await chain.getBlockHeight();
      return {
        paymentPayload,
        payload: paymentPayload.payload as Record<string, unknown>,
        payer: signer.address,
        lastValidBlockHeight: height + BLOCKHASH_VALIDITY_BLOCKS,
        validUntil: null,
      };
    },
  };
}

/**
 * The requirement without the lifetime a seller may name: the stock client signs with
 * `extra.recentBlockhash` when there is one instead of asking its own RPC, and a blockhash is what binds
 * a Solana transaction to one chain. A seller naming another network's (where the same address may hold
 * a token at the same mint) would get a transfer it can land there while this gateway watches, and
 * expires, it here; and `lastValidBlockHeight` below is counted from this chain. So the client always
 * takes the blockhash from the chain it pays on. Facilitators do not need theirs: the transaction names it.
 */
function ownLifetime(requirement: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> {
  const extra = requirement.extra as Record<string, unknown> | undefined;
  if (extra === undefined || extra === null || typeof extra !== 'object') return requirement;
  const { recentBlockhash: _blockhash, lastValidBlockHeight: _height, ...rest } = extra;
  return { ...requirement, extra: rest };
}

/**
 * The stock client knows Solana's public clusters only, and throws on any other id (a 500 here). A local
 * chain's own id, which GET /networks lists and a seller may name, is handed to it as the devnet id the
 * local chain stands in for: the client uses the id only to find an RPC (it is given this chain's) and
 * the transaction does not carry it.
 */
function knownNetwork(
  requirement: Readonly<Record<string, unknown>>,
  chain: ChainAdapter,
): Readonly<Record<string, unknown>> {
  return chain.info.isLocal && requirement.network === chain.info.id
    ? { ...requirement, network: SOLANA_DEVNET_ID }
    : requirement;
}
