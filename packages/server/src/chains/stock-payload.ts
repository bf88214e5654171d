import { x402Client } from '@x402/core/client';
import type { PaymentRequired, PaymentRequirements, SchemeNetworkClient } from '@x402/core/types';
import { GatewayError } from '../domain/gateway-error.ts';
import type { ExactPaymentRequest } from './exact-payer.ts';

/**
 * What the stock x402 client makes of a challenge holding only `input.requirement`, with its spend
 * controls off (gate402 checked the requirement against the buyer's limits before calling) and no
 * extensions (nothing the seller adds may have the client sign more than the payment).
 */
export async function stockPayload(
  scheme: SchemeNetworkClient,
  input: ExactPaymentRequest,
): Promise<Record<string, unknown>> {
  const requirement = input.requirement as unknown as PaymentRequirements;
  const client = x402Client.fromConfig({
    schemes: [{ network: requirement.network, client: scheme, x402Version: input.x402Version }],
    spendControls: false,
    paymentRequirementsSelector: () => requirement,
  });
  const challenge = {
    x402Version: input.x402Version,
    accepts: [requirement],
    ...(input.resource === undefined ? {} : { resource: input.resource }),
  } as unknown as PaymentRequired;
  let payload: Awaited<ReturnType<typeof client.createPaymentPayload>>;
  try {
    payload = await client.createPaymentPayload(challenge);
  } catch (error) {
    throw refusedByClient(error) ?? error;
  }
  const { extensions: _, ...withoutExtensions } = payload as unknown as Record<string, unknown>;
  return withoutExtensions;
}

/**
 * The stock client's own refusals of what a seller wrote (a network it does not know, an extra.memo
 * longer than it signs, a missing EIP-712 domain) are thrown as plain `Error`s; they are the seller's bad
 * input, answered PAYMENT_OPTION_REFUSED with the client's reason rather than a 500. Failures of the
 * chain or the network (SolanaError, viem's errors, fetch's TypeError) are subclasses and go through.
 */
function refusedByClient(error: unknown): GatewayError | undefined {
  if (!(error instanceof Error) || error.constructor !== Error) return undefined;
  return new GatewayError('PAYMENT_OPTION_REFUSED', {
    details: {
      paymentRequired: `the stock x402 client cannot sign the option chosen: ${error.message.slice(0, 160)}`,
    },
  });
}
