import { safeBase64Decode, safeBase64Encode } from '@x402/core/utils';

/** base64 JSON, as every x402 header value is. */
export function encodeHeaderJson(value: unknown): string {
  return safeBase64Encode(JSON.stringify(value));
}

/** The JSON object in an x402 header value, or undefined when it is not base64 of a JSON object. */
export function decodeHeaderJson(value: string): Record<string, unknown> | undefined {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value.trim())) return undefined;
  try {
    const parsed: unknown = JSON.parse(safeBase64Decode(value.trim()));
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
