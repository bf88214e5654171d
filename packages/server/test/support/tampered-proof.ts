/**
 * A gate402 proof with the last hex digit of its signature changed. Always a different proof: replacing
 * the end with a fixed text is not, when the signature happens to end with it (1 proof in ~4,000 ends
 * with 0000, which once let a "tampered" proof verify).
 */
export function tamperedProof(proof: string): string {
  return `${proof.slice(0, -1)}${proof.endsWith('0') ? '1' : '0'}`;
}
