import { x402Client } from '@x402/core/client';
import type { PaymentRequired, PaymentRequirements, SchemeNetworkClient } from '@x402/core/types';
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
  const payload = await client.createPaymentPayload(challenge);
  const { extensions: _, ...withoutExtensions } = payload as unknown as Record<string, unknown>;
  return withoutExtensions;
}
