import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { fromAtomicUnits } from '../decimal-amount.ts';
import type { Gate402Client } from '../gate402-client.ts';
import type { NetworkInfo } from '../network-catalog.ts';
import type { BlockhashAnswer, PaywallPageData, PaywallPageOption } from './page-data.ts';

/** The browser paywall page of `protect()`; `false` answers browsers the JSON 402 like any client. */
export interface PaywallPageOptions {
  /** Who sells, shown in the page's heading: `'Acme Weather'`. */
  readonly appName?: string;
  /**
   * A Solana JSON-RPC endpoint the paywall (not the browser) asks for a recent blockhash when a visitor
   * pays a Solana `exact` option; default the network's `rpcUrl` from the gateway's GET /networks, which
   * is null for an endpoint with an API key in it. Without either, the page offers no Solana payment.
   */
  readonly solanaRpcUrl?: string;
}

/** What the paywall answers instead of the JSON challenge. */
export interface PageAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  /** The HTML page, or the blockhash JSON already serialized: sent as is under its Content-Type. */
  readonly body: string;
}

/** The header the page sends to ask for a fresh blockhash, naming the Solana network (CAIP-2). */
export const BLOCKHASH_HEADER = 'Gate402-Paywall-Blockhash';

const SPL_TOKEN_PROGRAMS: Readonly<Record<string, string>> = {
  'spl-token': 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
  'spl-token-2022': 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb',
};

/** wallet-standard's names of the public Solana clusters, by CAIP-2 genesis hash. */
const WALLET_STANDARD_CHAINS: Readonly<Record<string, string>> = {
  'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp': 'solana:mainnet',
  'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1': 'solana:devnet',
  'solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z': 'solana:testnet',
};

/**
 * True for a browser, decided as the stock x402 middleware (@x402/core's x402HTTPResourceServer) does:
 * `Accept` names text/html and `User-Agent` says Mozilla. API clients (fetch, curl, x402 clients) ask
 * for JSON or anything and get the JSON 402 as before.
 */
export function isWebBrowser(header: (name: string) => string | undefined): boolean {
  return (header('accept') ?? '').includes('text/html') && (header('user-agent') ?? '').includes('Mozilla');
}

const PAGE_SCRIPT_FILE = new URL('../../dist/paywall-page/paywall.js', import.meta.url);

let pageScript: { text: string; hash: string } | null | undefined;

/**
 * The page's script, built with the package (npm run build -w @gate402/client: dist/paywall-page/), read
 * once. Null when it was never built (a source checkout before its build): browsers get the JSON 402.
 */
function loadPageScript(): { text: string; hash: string } | null {
  if (pageScript !== undefined) return pageScript;
  try {
    // A `</script` inside would end the inline script early; the bundle has none, but make sure.
    const text = readFileSync(PAGE_SCRIPT_FILE, 'utf8').replaceAll('</script', '<\\/script');
    pageScript = { text, hash: sha256(text) };
  } catch {
    pageScript = null;
  }
  return pageScript;
}

/** Forget the script read, so a rebuilt one is read again (tests that build it). */
export function reloadPaywallPageScript(): void {
  pageScript = undefined;
}

const STYLE = `
:root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; }
body { margin: 0; padding: 2rem 1rem; }
main { max-width: 40rem; margin: 0 auto; }
h1 { font-size: 1.6rem; margin: 0 0 .5rem; }
h2 { font-size: 1.2rem; margin: 1.5rem 0 .5rem; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
dt { font-weight: 600; }
dd { margin: 0; overflow-wrap: anywhere; }
.field { margin: .75rem 0; display: flex; flex-direction: column; gap: .25rem; }
select, button { font: inherit; padding: .5rem; border-radius: .375rem; }
button { font-weight: 600; border: 2px solid currentColor; cursor: pointer; }
button:disabled { opacity: .6; cursor: not-allowed; }
:focus-visible { outline: 3px solid Highlight; outline-offset: 2px; }
#pay-error { border-left: 4px solid #c62828; padding: .5rem .75rem; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; padding: .75rem; border: 1px solid GrayText; }
iframe { width: 100%; min-height: 20rem; border: 1px solid GrayText; }
.note { font-size: .9rem; }
`;
const STYLE_HASH = sha256(STYLE);

/**
 * The paywall's answer to browsers: a self-contained 402 page that explains the offer and lets a visitor
 * pay an `exact` option with an injected wallet, and the fresh blockhash that page asks for before a
 * Solana payment. x402 clients never see either.
 */
export class BrowserPaywall {
  /** Token program, decimals and symbol by network and asset, asked once; a failed lookup is asked again. */
  readonly #tokens = new Map<string, Promise<TokenFacts>>();

  constructor(
    private readonly gateway: Gate402Client,
    private readonly options: PaywallPageOptions | false = {},
  ) {}

  /**
   * The page for a browser that presented no payment, or the blockhash the page asked for; undefined
   * for anything else (the JSON 402 answers it). `challengeHeaders`: the 402's x402 headers, kept.
   */
  async answer(
    request: { readonly url: string; header(name: string): string | undefined },
    offer: PaymentRequired,
    networks: readonly NetworkInfo[],
    challengeHeaders: Record<string, string>,
  ): Promise<PageAnswer | undefined> {
    if (this.options === false) return undefined;
    const blockhashFor = request.header(BLOCKHASH_HEADER);
    if (blockhashFor !== undefined) return this.#blockhash(blockhashFor, offer, networks);
    if (!isWebBrowser((name) => request.header(name))) return undefined;
    const script = loadPageScript();
    if (script === null) return undefined;
    const { options, others } = await this.#payable(offer, networks);
    const data: PaywallPageData = {
      paymentRequired: {
        x402Version: 2,
        resource: offer.resource,
        accepts: offer.accepts as unknown as Record<string, unknown>[],
      },
      options,
      blockhashHeader: BLOCKHASH_HEADER,
    };
    return {
      status: 402,
      headers: {
        ...challengeHeaders,
        'Content-Type': 'text/html; charset=utf-8',
        'Content-Security-Policy': [
          "default-src 'none'",
          `script-src 'sha256-${script.hash}'`,
          `style-src 'sha256-${STYLE_HASH}'`,
          "connect-src 'self'",
          "base-uri 'none'",
          "form-action 'none'",
          "frame-ancestors 'none'",
        ].join('; '),
        'Cache-Control': 'no-store',
        'X-Content-Type-Options': 'nosniff',
        'Referrer-Policy': 'no-referrer',
      },
      body: renderPage(offer, options, others, this.options.appName, data, script.text),
    };
  }

  /** A recent blockhash of a Solana network one of the offer's `exact` options pays on. */
  async #blockhash(
    network: string,
    offer: PaymentRequired,
    networks: readonly NetworkInfo[],
  ): Promise<PageAnswer> {
    const json = (status: number, body: unknown): PageAnswer => ({
      status,
      headers: { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' },
      body: JSON.stringify(body),
    });
    const offered = offer.accepts.some((r) => r.scheme === 'exact' && r.network === network);
    const rpcUrl = offered ? this.#rpcUrl(network, networks) : undefined;
    if (!network.startsWith('solana:') || rpcUrl === undefined) {
      return json(400, {
        error: `${BLOCKHASH_HEADER}: no Solana exact option of this resource is on ${network}`,
      });
    }
    try {
      return json(200, await latestBlockhash(rpcUrl));
    } catch (error) {
      return json(502, {
        error: `the Solana network did not answer a blockhash: ${(error as Error).message}`,
      });
    }
  }

  #rpcUrl(network: string, networks: readonly NetworkInfo[]): string | undefined {
    if (this.options !== false && this.options.solanaRpcUrl !== undefined) return this.options.solanaRpcUrl;
    return findNetwork(network, networks)?.rpcUrl ?? undefined;
  }

  /** The options a browser wallet can pay, and the others for people, each with its price. */
  async #payable(
    offer: PaymentRequired,
    networks: readonly NetworkInfo[],
  ): Promise<{ options: PaywallPageOption[]; others: string[] }> {
    const options: PaywallPageOption[] = [];
    const others: string[] = [];
    for (const [index, requirement] of offer.accepts.entries()) {
      const network = findNetwork(requirement.network, networks);
      const where = `on ${network?.name ?? requirement.network}`;
      if (requirement.asset === 'native') {
        // gate402's own scheme: a proof from the buyer's gate402 gateway, which no browser wallet makes.
        const decimals = network?.nativeCurrency.decimals;
        const price =
          decimals === undefined
            ? `${requirement.amount} atomic units of the native currency`
            : `${fromAtomicUnits(BigInt(requirement.amount), decimals)} ${network?.nativeCurrency.symbol}`;
        others.push(
          `${price} ${where}, with ${requirement.scheme} (an x402 client through a gate402 gateway)`,
        );
        continue;
      }
      let token: TokenFacts;
      try {
        token = await this.#token(requirement, network);
      } catch {
        others.push(
          `${requirement.amount} atomic units of ${requirement.asset} ${where} (${requirement.scheme})`,
        );
        continue;
      }
      if (requirement.scheme !== 'exact') {
        // `upto` and the rest: paid with an x402 client; the page pays `exact` only.
        const most = `${fromAtomicUnits(BigInt(requirement.amount), token.decimals)} ${token.symbol}`;
        others.push(
          `${requirement.scheme === 'upto' ? `up to ${most}` : most} ${where}, with ${requirement.scheme} (an x402 client)`,
        );
        continue;
      }
      const price = `${fromAtomicUnits(BigInt(requirement.amount), token.decimals)} ${token.symbol}`;
      const label = `${price} ${where}`;
      if (requirement.network.startsWith('solana:')) {
        if (token.program === undefined || this.#rpcUrl(requirement.network, networks) === undefined) {
          others.push(`${label} (exact; the seller named no Solana RPC endpoint for browser payments)`);
          continue;
        }
        options.push({
          kind: 'solana-exact',
          index,
          label,
          price,
          chain:
            WALLET_STANDARD_CHAINS[requirement.network] ??
            (network?.isLocal ? 'solana:localnet' : requirement.network),
          tokenProgram: token.program,
          decimals: token.decimals,
        });
        continue;
      }
      const extra = requirement.extra ?? {};
      const eip3009 =
        requirement.network.startsWith('eip155:') &&
        extra.assetTransferMethod === undefined &&
        typeof extra.name === 'string' &&
        typeof extra.version === 'string';
      if (!eip3009) {
        others.push(`${label} (exact through Permit2: pay it with an x402 client)`);
        continue;
      }
      options.push({
        kind: 'evm-eip3009',
        index,
        label,
        price,
        chainId: Number(requirement.network.slice('eip155:'.length)),
      });
    }
    return { options, others };
  }

  #token(requirement: PaymentRequirements, network: NetworkInfo | undefined): Promise<TokenFacts> {
    const key = `${requirement.network} ${requirement.asset}`;
    let facts = this.#tokens.get(key);
    if (facts === undefined) {
      const listed = network?.tokens.find((t) => t.address.toLowerCase() === requirement.asset.toLowerCase());
      facts = this.gateway.tokenInfo(requirement.asset).then((info) => ({
        decimals: info.decimals,
        symbol: listed?.symbol ?? info.symbol ?? shortAddress(requirement.asset),
        program: SPL_TOKEN_PROGRAMS[info.program],
      }));
      facts.catch(() => this.#tokens.delete(key));
      this.#tokens.set(key, facts);
    }
    return facts;
  }
}

interface TokenFacts {
  readonly decimals: number;
  readonly symbol: string;
  /** The Solana token program's address; undefined on EVM. */
  readonly program: string | undefined;
}

function findNetwork(id: string, networks: readonly NetworkInfo[]): NetworkInfo | undefined {
  return networks.find((n) => n.id === id) ?? networks.find((n) => n.x402Aliases.includes(id));
}

/** getLatestBlockhash over JSON-RPC, as the stock client asks it (the node's default commitment). */
async function latestBlockhash(rpcUrl: string): Promise<BlockhashAnswer> {
  const answer = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getLatestBlockhash', params: [] }),
    signal: AbortSignal.timeout(10_000),
  });
  if (!answer.ok) throw new Error(`HTTP ${answer.status}`);
  const body = (await answer.json()) as {
    result?: { value?: { blockhash?: unknown; lastValidBlockHeight?: unknown } };
    error?: { message?: unknown };
  };
  const value = body.result?.value;
  if (typeof value?.blockhash !== 'string' || value.lastValidBlockHeight === undefined) {
    throw new Error(String(body.error?.message ?? 'no blockhash in the answer'));
  }
  return { blockhash: value.blockhash, lastValidBlockHeight: String(value.lastValidBlockHeight) };
}

function renderPage(
  offer: PaymentRequired,
  options: readonly PaywallPageOption[],
  others: readonly string[],
  appName: string | undefined,
  data: PaywallPageData,
  script: string,
): string {
  const what = offer.resource.description ?? 'access to this resource';
  const seller = appName === undefined ? 'This site' : escapeHtml(appName);
  const prices = [...options.map((o) => o.label), ...others].map((p) => `<li>${escapeHtml(p)}</li>`).join('');
  const choices = options.map((o) => `<option value="${o.index}">${escapeHtml(o.label)}</option>`).join('');
  const form =
    options.length === 0
      ? `<p>None of these can be paid from this page: pay this URL with an x402 client (for example
<code>@x402/fetch</code>, or <code>payingFetch</code> of <code>@gate402/client</code>).</p>`
      : `<noscript><p>Paying here needs JavaScript and a browser wallet. x402 clients can pay this URL directly.</p></noscript>
<form id="pay-form" hidden novalidate>
<h2>Pay with a browser wallet</h2>
<div class="field"><label for="pay-option">Payment</label><select id="pay-option">${choices}</select></div>
<div class="field"><label for="pay-wallet">Wallet</label><select id="pay-wallet" aria-describedby="pay-wallet-hint"></select>
<p id="pay-wallet-hint" class="note"></p></div>
<button id="pay-button" type="submit">Pay</button>
</form>
<p id="pay-status" role="status" aria-live="polite"></p>
<p id="pay-error" role="alert" tabindex="-1" hidden></p>
<section id="result" aria-labelledby="result-heading" hidden>
<h2 id="result-heading" tabindex="-1">Your purchase</h2>
<div id="result-body"></div>
</section>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Payment required: ${escapeHtml(what)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<h1>Payment required</h1>
<p>${seller} sells ${escapeHtml(what)}.</p>
<dl>
<dt>Resource</dt><dd><code>${escapeHtml(offer.resource.url)}</code></dd>
<dt>Price</dt><dd><ul>${prices}</ul></dd>
</dl>
${form}
<p class="note">Paid with x402: your wallet signs a payment of exactly this price, which the seller settles on chain; the network fee is not yours to pay.</p>
</main>
${
  options.length === 0
    ? ''
    : `<script type="application/json" id="gate402-paywall-data">${jsonForHtml(data)}</script>
<script>${script}</script>`
}
</body>
</html>
`;
}

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('base64');
}

function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );
}

/** JSON inside a <script> element: nothing in it can end the element or open a comment. */
function jsonForHtml(value: unknown): string {
  return JSON.stringify(value)
    .replaceAll('<', '\\u003c')
    .replaceAll('>', '\\u003e')
    .replaceAll('&', '\\u0026')
    .replaceAll('\u2028', '\\u2028')
    .replaceAll('\u2029', '\\u2029');
}

function shortAddress(address: string): string {
  return address.length > 12 ? `${address.slice(0, 4)}…${address.slice(-4)}` : address;
}
