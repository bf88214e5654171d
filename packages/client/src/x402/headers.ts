/**
 * x402's HTTP headers (values are base64 of UTF-8 JSON). v2 names the challenge, payment and answer
 * PAYMENT-REQUIRED, PAYMENT-SIGNATURE and PAYMENT-RESPONSE; v1 carried the challenge in the 402 body and
 * used X-PAYMENT and X-PAYMENT-RESPONSE.
 */
export const PAYMENT_REQUIRED_HEADER = 'PAYMENT-REQUIRED';
export const PAYMENT_SIGNATURE_HEADER = 'PAYMENT-SIGNATURE';
export const PAYMENT_RESPONSE_HEADER = 'PAYMENT-RESPONSE';
export const X_PAYMENT_HEADER = 'X-PAYMENT';
export const X_PAYMENT_RESPONSE_HEADER = 'X-PAYMENT-RESPONSE';

/** Headers the 402 and paid answers name, so browsers' fetch may read them across origins. */
export const EXPOSED_HEADERS = `${PAYMENT_REQUIRED_HEADER}, ${PAYMENT_RESPONSE_HEADER}, ${X_PAYMENT_RESPONSE_HEADER}`;
