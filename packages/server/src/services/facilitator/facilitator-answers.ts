/** x402 facilitator answers, exactly as x402 defines them (VerifyResponse, SettleResponse, SupportedResponse). */
export interface VerifyAnswer {
  isValid: boolean;
  invalidReason?: string;
  invalidMessage?: string;
  payer?: string;
}
export interface SettleAnswer {
  success: boolean;
  errorReason?: string;
  errorMessage?: string;
  payer?: string;
  transaction: string;
  network: string;
  /** upto: the amount actually settled, atomic units (x402's SettleResponse `amount`); absent for exact. */
  amount?: string;
}
export interface SupportedAnswer {
  kinds: { x402Version: number; scheme: string; network: string; extra?: Record<string, unknown> }[];
  extensions: string[];
  signers: Record<string, string[]>;
}
