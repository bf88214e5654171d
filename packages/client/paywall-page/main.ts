import type {
  BlockhashAnswer,
  PaywallPageData,
  PaywallPageOption,
} from '../src/browser-paywall/page-data.ts';
import { type EvmWallet, payWithEvm, watchEvmWallets } from './evm.ts';
import {
  base64,
  canPay,
  messageOf,
  payWithSolana,
  type StandardWallet,
  WalletRefusal,
  watchStandardWallets,
} from './solana.ts';

/*
 * The paywall page's script (bundled into the page at build time; the page's Content-Security-Policy
 * admits it by hash). The server renders the offer; this lets a visitor pay one option with an injected
 * wallet, retries the request with PAYMENT-SIGNATURE and shows what was bought.
 */

const data = JSON.parse(element('gate402-paywall-data').textContent ?? '{}') as PaywallPageData;
const form = element('pay-form') as HTMLFormElement;
const optionSelect = element('pay-option') as HTMLSelectElement;
const walletSelect = element('pay-wallet') as HTMLSelectElement;
const walletHint = element('pay-wallet-hint');
const payButton = element('pay-button') as HTMLButtonElement;
const status = element('pay-status');
const problem = element('pay-error');
const result = element('result');
const resultHeading = element('result-heading');
const resultBody = element('result-body');

let solanaWallets: readonly StandardWallet[] = [];
let evmWallets: readonly EvmWallet[] = [];
let busy = false;

function element(id: string): HTMLElement {
  const found = document.getElementById(id);
  if (found === null) throw new Error(`the paywall page has no #${id}`);
  return found;
}

function selectedOption(): PaywallPageOption | undefined {
  return data.options.find((o) => String(o.index) === optionSelect.value);
}

/** The wallets that can pay the selected option, in the wallet list; the button says what it does. */
function render(): void {
  const option = selectedOption();
  const wallets: readonly { name: string }[] =
    option === undefined
      ? []
      : option.kind === 'solana-exact'
        ? solanaWallets.filter((w) => canPay(w, option.chain))
        : evmWallets;
  const previous = walletSelect.value;
  walletSelect.replaceChildren(
    ...wallets.map((wallet, i) => {
      const item = document.createElement('option');
      item.value = String(i);
      item.textContent = wallet.name;
      return item;
    }),
  );
  if (wallets.some((_, i) => String(i) === previous)) walletSelect.value = previous;
  const none = wallets.length === 0;
  walletSelect.disabled = none || busy;
  walletHint.textContent = none
    ? option?.kind === 'solana-exact'
      ? `No Solana wallet that signs for ${option.chain} was found in this browser. Install or unlock one, then reload.`
      : 'No Ethereum wallet (EIP-1193) was found in this browser. Install or unlock one, then reload.'
    : '';
  payButton.disabled = none || busy || option === undefined;
  payButton.textContent = option === undefined ? 'Pay' : `Pay ${option.price}`;
}

function say(text: string): void {
  status.textContent = text;
}

function fail(text: string): void {
  problem.textContent = text;
  problem.hidden = false;
  say('');
}

async function freshBlockhash(network: string): Promise<BlockhashAnswer> {
  const answer = await fetch(location.href, {
    headers: { [data.blockhashHeader]: network, Accept: 'application/json' },
    cache: 'no-store',
  });
  if (!answer.ok) throw new Error(`the seller could not give a recent blockhash (${answer.status})`);
  return (await answer.json()) as BlockhashAnswer;
}

function utf8Base64(text: string): string {
  return base64(new TextEncoder().encode(text));
}

function decodeHeader(value: string | null): Record<string, unknown> | undefined {
  if (value === null) return undefined;
  try {
    const bytes = Uint8Array.from(atob(value), (c) => c.charCodeAt(0));
    return JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** Why the seller refused: PAYMENT-REQUIRED's `error` (x402 v2), else the body's. */
async function refusalOf(answer: Response): Promise<string> {
  const challenge = decodeHeader(answer.headers.get('PAYMENT-REQUIRED'));
  if (typeof challenge?.error === 'string') return challenge.error;
  const body = (await answer.json().catch(() => undefined)) as { error?: unknown } | undefined;
  return typeof body?.error === 'string' ? body.error : `HTTP ${answer.status}`;
}

async function show(answer: Response): Promise<void> {
  const type = answer.headers.get('Content-Type') ?? '';
  const settlement = decodeHeader(answer.headers.get('PAYMENT-RESPONSE'));
  let content: Node;
  if (type.includes('json')) {
    const pre = document.createElement('pre');
    const text = await answer.text();
    try {
      pre.textContent = JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      pre.textContent = text;
    }
    content = pre;
  } else if (type.startsWith('text/html')) {
    // Shown without its scripts: the frame is sandboxed and under this page's policy.
    const frame = document.createElement('iframe');
    frame.setAttribute('sandbox', '');
    frame.title = 'The purchased page';
    frame.srcdoc = await answer.text();
    content = frame;
  } else if (type.startsWith('text/') || type === '') {
    const pre = document.createElement('pre');
    pre.textContent = await answer.text();
    content = pre;
  } else {
    const link = document.createElement('a');
    link.href = URL.createObjectURL(await answer.blob());
    link.download = decodeURIComponent(new URL(location.href).pathname.split('/').pop() || 'download');
    link.textContent = `Download (${type})`;
    content = link;
  }
  const receipt = document.createElement('p');
  receipt.id = 'result-receipt';
  receipt.textContent =
    typeof settlement?.transaction === 'string' ? `Transaction: ${settlement.transaction}` : '';
  resultBody.replaceChildren(receipt, content);
  form.hidden = true;
  result.hidden = false;
  say('Paid. Your purchase is shown below.');
  resultHeading.focus();
}

async function pay(): Promise<void> {
  const option = selectedOption();
  if (option === undefined) return;
  const requirement = data.paymentRequired.accepts[option.index] as Record<string, unknown>;
  const walletIndex = Number(walletSelect.value);
  let payload: unknown;
  if (option.kind === 'solana-exact') {
    const wallet = solanaWallets.filter((w) => canPay(w, option.chain))[walletIndex];
    if (wallet === undefined) return;
    payload = await payWithSolana(
      wallet,
      option,
      requirement,
      () => freshBlockhash(String(requirement.network)),
      say,
    );
  } else {
    const wallet = evmWallets[walletIndex];
    if (wallet === undefined) return;
    payload = await payWithEvm(wallet, option, requirement, say);
  }
  const signature = utf8Base64(
    JSON.stringify({
      x402Version: 2,
      resource: data.paymentRequired.resource,
      accepted: requirement,
      payload,
    }),
  );
  say('Sending the payment to the seller…');
  const answer = await fetch(location.href, {
    headers: { 'PAYMENT-SIGNATURE': signature, Accept: 'application/json, text/plain;q=0.9, */*;q=0.8' },
    cache: 'no-store',
  });
  if (answer.status === 402) {
    fail(`The seller did not accept the payment: ${await refusalOf(answer)}. Nothing was charged.`);
    return;
  }
  if (!answer.ok) {
    fail(`The seller answered ${answer.status}: ${await refusalOf(answer)}`);
    return;
  }
  await show(answer);
}

form.addEventListener('submit', (event) => {
  event.preventDefault();
  if (busy) return;
  busy = true;
  problem.hidden = true;
  problem.textContent = '';
  form.setAttribute('aria-busy', 'true');
  render();
  pay()
    .catch((error: unknown) => {
      fail(
        error instanceof WalletRefusal
          ? `${error.message}. Nothing was paid.`
          : `The payment could not be made: ${messageOf(error)}. Nothing was paid.`,
      );
    })
    .finally(() => {
      busy = false;
      form.removeAttribute('aria-busy');
      render();
      if (!problem.hidden) problem.focus();
    });
});
optionSelect.addEventListener('change', render);

watchStandardWallets((wallets) => {
  solanaWallets = wallets;
  render();
});
watchEvmWallets((wallets) => {
  evmWallets = wallets;
  render();
});
form.hidden = false;
render();
