import { createKeyPairSignerFromBytes } from '@solana/kit';
import type { SchemeNetworkClient } from '@x402/core/types';
import { isSolanaAddress } from '../../domain/address.ts';
import type { ChainAdapter } from '../chain-adapter.ts';
import type { ExactPayer, ExactPaymentRequest, SignedExactPayment } from '../exact-payer.ts';
import { stockPayload } from '../stock-payload.ts';

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
      const paymentPayload = await stockPayload(scheme, input);
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
