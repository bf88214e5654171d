import type { SchemeNetworkClient } from '@x402/core/types';
import type { ClientEvmSigner } from '@x402/evm';
import { bytesToHex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { ChainAdapter } from '../chain-adapter.ts';
import type { ExactPayer, ExactPaymentRequest, SignedExactPayment } from '../exact-payer.ts';
import { stockPayload } from '../stock-payload.ts';

/**
 * x402 `exact` on EVM, buyer side (see ExactPayer): the stock `@x402/evm` client signs an EIP-3009
 * transferWithAuthorization, or for `extra.assetTransferMethod: "permit2"` a Permit2 permit-witness through
 * x402's exact proxy (typed data only: nothing is sent, nothing needs gas). The signer it is given
 * can sign typed data and nothing else, so no extension of the stock client can have it sign a
 * transaction or an approval.
 */
export function exactEvmPayer(_chain: ChainAdapter): ExactPayer {
  return {
    family: 'evm',
    refusal(requirement) {
      const extra = requirement.extra as Record<string, unknown> | undefined;
      // Permit2: the stock client signs a permit-witness through x402's exact proxy; the caller sends the
      // wallet's one Permit2 approval of the token first (services/payments/x402/permit2-approvals.ts).
      if (extra?.assetTransferMethod === 'permit2') return undefined;
      if (extra?.assetTransferMethod !== undefined && extra.assetTransferMethod !== 'eip3009') {
        return `extra.assetTransferMethod ${String(extra.assetTransferMethod).slice(0, 40)} is not paid from custodial wallets; eip3009 or permit2 only`;
      }
      if (typeof extra?.name !== 'string' || typeof extra.version !== 'string') {
        return "extra.name and extra.version must give the token's EIP-712 domain (EIP-3009)";
      }
      return undefined;
    },
    async sign(input: ExactPaymentRequest, secretKey: Uint8Array): Promise<SignedExactPayment> {
      const account = privateKeyToAccount(bytesToHex(secretKey));
      const signer: ClientEvmSigner = {
        address: account.address,
        signTypedData: (message) =>
          account.signTypedData(message as Parameters<typeof account.signTypedData>[0]),
      };
      // Loaded when first used: a gateway that never pays an x402 seller does not load the buyer scheme.
      const scheme: SchemeNetworkClient =
        input.x402Version === 1
          ? new (await import('@x402/evm/v1')).ExactEvmSchemeV1(signer)
          : new (await import('@x402/evm/exact/client')).ExactEvmScheme(signer);
      const paymentPayload = await stockPayload(scheme, input);
      const payload = paymentPayload.payload as Record<string, unknown>;
      const authorization = (payload.authorization ?? payload.permit2Authorization) as
        | Record<string, unknown>
        | undefined;
      // EIP-3009's validBefore, or the Permit2 permit's deadline: when the payment can no longer be used.
      const validBefore = authorization?.validBefore ?? authorization?.deadline;
      if (typeof validBefore !== 'string' || !/^\d{1,20}$/.test(validBefore)) {
        throw new Error('the stock EVM client made a payload without a validBefore or deadline');
      }
      return {
        paymentPayload,
        payload,
        payer: account.address,
        lastValidBlockHeight: null,
        validUntil: Number(validBefore) * 1000,
      };
    },
  };
}
