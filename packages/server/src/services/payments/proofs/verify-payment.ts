import type { NetworkRegistry } from '../../../chains/network-registry.ts';
import { GatewayError } from '../../../domain/gateway-error.ts';
import { decodeX402Header } from '../../../x402/payment-header.ts';
import { statedTerms } from '../payment-asset.ts';
import type { VerifyResult } from '../receive-result.ts';
import type { X402ReceiveService } from '../x402/x402-receive.ts';
import type { ProofVerifier } from './proof-verifier.ts';

/** How long an x402 verification may take (it simulates on chain, and asks a facilitator). */
const X402_VERIFY_TIMEOUT_MS = 30_000;

export interface VerifyInput {
  /** Base64 of the proof's text (a gate402 proof, `0x…`). */
  readonly paymentProof: string;
  /** Atomic units of `asset`. */
  readonly amount: bigint;
  readonly recipient: string;
  /** A symbol GET /networks lists or a mint / contract address; absent: the native currency. */
  readonly asset?: string | undefined;
  /** The network (CAIP-2) the payment must be on; absent: the default network of the recipient's family. */
  readonly network?: string | undefined;
}

/**
 * Simple verification (spec §4.5): is this proof a payment of at least `amount` to `recipient`, on chain
 * now? A refusal is an answer (`verified: false` with a stable reason), not an error; the proof is never
 * consumed, so the seller still redeems it with /payment/receive.
 */
export class VerifyPaymentService {
  constructor(
    private readonly verifier: ProofVerifier,
    private readonly x402: X402ReceiveService,
    private readonly networks: NetworkRegistry,
  ) {}

  async verify(input: VerifyInput): Promise<VerifyResult> {
    // An asset or network that is not configured is the caller's mistake (400), not a refused proof.
    const { network, asset } = await statedTerms(
      this.networks,
      { address: input.recipient, network: input.network, asset: input.asset },
      'recipient',
    );
    // An x402 payment header value is itself base64 JSON: it is given as it came.
    const header = decodeX402Header(input.paymentProof);
    if (header !== undefined) {
      return this.x402.verify({
        walletAddress: input.recipient,
        header,
        expected: { atomic: input.amount },
        asset,
        network,
        timeoutMs: X402_VERIFY_TIMEOUT_MS,
      });
    }
    const proof = Buffer.from(input.paymentProof, 'base64').toString('utf8').trim();
    try {
      const verified = await this.verifier.verify({
        paymentProof: proof,
        recipient: input.recipient,
        expected: { atomic: input.amount },
        asset,
        network,
        timeoutMs: 0,
      });
      return {
        verified: true,
        transaction_id: verified.signature,
        network: verified.chain.info.id,
        asset: { ...verified.asset },
      };
    } catch (error) {
      if (
        error instanceof GatewayError &&
        (error.code === 'INVALID_PAYMENT_PROOF' || error.code === 'PAYMENT_VERIFICATION_FAILED')
      ) {
        return {
          verified: false,
          reason: error.details?.paymentProof ?? 'invalid',
          message: error.message,
        };
      }
      throw error;
    }
  }
}
