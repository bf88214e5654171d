// JSON text with u64 values: bigints are written as plain JSON numbers (as Agave writes u64),
// not strings and not rounded doubles. @solana/kit parses them back losslessly.

const MARK = '\u0000big:';
const MARKED = /"\\u0000big:(\d+)"/g; // JSON.stringify escapes the NUL as \u0000

export function stringifyJson(value: unknown): string {
  let sawBigint = false;
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v !== 'bigint') return v;
    sawBigint = true;
    return MARK + v.toString();
  });
  return sawBigint ? text.replace(MARKED, '$1') : text;
}
