import type { FastifyInstance } from 'fastify';
import { invalidParameters } from '../../domain/gateway-error.ts';

/**
 * JSON bodies are parsed as usual, except that a number a double cannot hold as written is refused
 * (400, naming its field) instead of rounded. Amounts are money: `1.0000000000000000001` ETH parses to
 * exactly 1 in JavaScript and `100.000000000000000001` to 100, so without this a request with more
 * decimals than wei has, or just over a bound, would be paid as a different amount. A double keeps
 * every decimal of up to 15 significant digits, so only longer numbers need the check.
 */
export function installExactJson(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  // Fastify also reads text/plain bodies as strings by default; every body here is JSON, so any other
  // type is 415 UNSUPPORTED_MEDIA_TYPE (README) rather than a 400 saying the body is not an object.
  app.removeContentTypeParser('text/plain');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const inexact = firstInexactNumber(body as string);
    if (inexact !== undefined) {
      done(
        invalidParameters({
          [inexact.field]: `${inexact.text} cannot be held exactly: use fewer digits (at most the currency's decimals, within the bounds)`,
        }),
      );
      return;
    }
    parse(request, body as string, done);
  });
}

const NUMBER = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const SAFE_SIGNIFICANT_DIGITS = 15;
/**
 * More than 15 significant digits need at least 16 digits and dots in a row: a body without such a run
 * (most, base64 payloads included) holds no inexact number, and one native regex search tells that
 * instead of a walk through every character.
 */
const LONG_NUMBER_RUN = /[\d.]{16}/;

/** The first number literal (outside strings) whose value changes when parsed, with the key it belongs to. */
export function firstInexactNumber(json: string): { field: string; text: string } | undefined {
  if (!LONG_NUMBER_RUN.test(json)) return undefined;
  let key: string | undefined;
  let lastString: string | undefined;
  for (let i = 0; i < json.length; i++) {
    const c = json[i];
    if (c === '"') {
      const start = i;
      for (i++; i < json.length && json[i] !== '"'; i++) if (json[i] === '\\') i++;
      lastString = json.slice(start, i + 1);
    } else if (c === ':') {
      key = lastString === undefined ? undefined : safeKey(lastString);
    } else if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) {
      NUMBER.lastIndex = i;
      const match = NUMBER.exec(json);
      if (match === null) continue;
      const text = match[0];
      i += text.length - 1;
      if (significantDigits(text) > SAFE_SIGNIFICANT_DIGITS && !holdsExactly(text)) {
        return { field: key ?? 'body', text };
      }
    } else if (c === ',' || c === '{' || c === '[') lastString = undefined;
  }
  return undefined;
}

function safeKey(quoted: string): string | undefined {
  try {
    const key: unknown = JSON.parse(quoted);
    return typeof key === 'string' ? key : undefined;
  } catch {
    return undefined;
  }
}

function significantDigits(text: string): number {
  const mantissa = text
    .replace(/^-/, '')
    .replace(/[eE].*$/, '')
    .replace('.', '');
  return mantissa.replace(/^0+/, '').length;
}

function holdsExactly(text: string): boolean {
  return canonical(text) === canonical(String(Number(text)));
}

/** A decimal literal as `<sign><digits>e<exponent>` with no leading or trailing zeros: equal values, equal text. */
function canonical(text: string): string {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (m === null) return text;
  const fraction = m[3] ?? '';
  let digits = `${m[2]}${fraction}`.replace(/^0+/, '');
  if (digits === '') return '0';
  let exponent = Number(m[4] ?? 0) - fraction.length;
  const kept = digits.replace(/0+$/, '');
  exponent += digits.length - kept.length;
  digits = kept;
  return `${m[1]}${digits}e${exponent}`;
}
