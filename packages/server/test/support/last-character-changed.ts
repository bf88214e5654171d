/**
 * `text` with its last character replaced by another one: a tampered proof, key or token that is always
 * different from the original. Replacing the end with a fixed text is not, when the original happens to
 * end with it (one proof in ~4,000 ends with 0000, one token in 64 with x), and such a test then fails
 * at random.
 */
export function lastCharacterChanged(text: string): string {
  return `${text.slice(0, -1)}${text.endsWith('0') ? '1' : '0'}`;
}
