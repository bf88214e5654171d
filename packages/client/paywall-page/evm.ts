import { getAddress } from 'viem';
import type { EvmExactOption } from '../src/browser-paywall/page-data.ts';
import { messageOf, WalletRefusal } from './solana.ts';

/** An EIP-1193 provider (window.ethereum, or one announced by EIP-6963). */
export interface Eip1193Provider {
  request(args: { method: string; params?: unknown[] | Record<string, unknown> }): Promise<unknown>;
}

export interface EvmWallet {
  readonly name: string;
  readonly provider: Eip1193Provider;
}

/**
 * The page's EVM wallets: those announced by EIP-6963 (several extensions side by side) and, if none
 * announced itself, `window.ethereum`.
 */
export function watchEvmWallets(onChange: (wallets: readonly EvmWallet[]) => void): void {
  const announced: EvmWallet[] = [];
  const report = () => {
    const injected = (window as { ethereum?: Eip1193Provider }).ethereum;
    const legacy =
      injected !== undefined && !announced.some((w) => w.provider === injected)
        ? [{ name: 'Browser wallet (window.ethereum)', provider: injected }]
        : [];
    onChange([...announced, ...legacy]);
  };
  window.addEventListener('eip6963:announceProvider', (event) => {
    const detail = (event as CustomEvent<{ info?: { name?: string }; provider?: Eip1193Provider }>).detail;
    if (detail?.provider === undefined || announced.some((w) => w.provider === detail.provider)) return;
    announced.push({ name: detail.info?.name ?? 'Browser wallet', provider: detail.provider });
    report();
  });
  window.dispatchEvent(new Event('eip6963:requestProvider'));
  report();
}

/**
 * The `exact` EIP-3009 payment exactly as the stock @x402/evm client builds it (2.27): a
 * TransferWithAuthorization of the amount to the payee, valid from 0 until now + maxTimeoutSeconds, with
 * a random 32-byte nonce, signed with eth_signTypedData_v4 under the token's EIP-712 domain (`extra.name`,
 * `extra.version`, the chain id, the token contract).
 */
export async function payWithEvm(
  wallet: EvmWallet,
  option: EvmExactOption,
  requirement: Readonly<Record<string, unknown>>,
  onStep: (status: string) => void,
): Promise<{ authorization: Record<string, string>; signature: string }> {
  const extra = (requirement.extra ?? {}) as Record<string, unknown>;
  if (typeof extra.name !== 'string' || typeof extra.version !== 'string') {
    throw new Error('The offer names no EIP-712 domain (extra.name, extra.version) for the token.');
  }
  onStep(`Connecting to ${wallet.name}…`);
  let accounts: unknown;
  try {
    accounts = await wallet.provider.request({ method: 'eth_requestAccounts' });
  } catch (error) {
    throw refusal(wallet, 'did not connect', error);
  }
  const first = Array.isArray(accounts) ? accounts[0] : undefined;
  if (typeof first !== 'string') throw new WalletRefusal(`${wallet.name} shared no account.`);
  const from = getAddress(first);

  const chainHex = `0x${option.chainId.toString(16)}`;
  const current = await wallet.provider.request({ method: 'eth_chainId' });
  if (typeof current !== 'string' || BigInt(current) !== BigInt(option.chainId)) {
    onStep(`Asking ${wallet.name} to switch to chain ${option.chainId}…`);
    try {
      await wallet.provider.request({
        method: 'wallet_switchEthereumChain',
        params: [{ chainId: chainHex }],
      });
    } catch (error) {
      throw refusal(wallet, `is on another chain and did not switch to chain ${option.chainId}`, error);
    }
  }

  const now = Math.floor(Date.now() / 1000);
  const authorization = {
    from,
    to: getAddress(String(requirement.payTo)),
    value: String(requirement.amount),
    validAfter: '0',
    validBefore: String(now + Number(requirement.maxTimeoutSeconds)),
    nonce: `0x${Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, '0')).join('')}`,
  };
  const typedData = {
    types: {
      EIP712Domain: [
        { name: 'name', type: 'string' },
        { name: 'version', type: 'string' },
        { name: 'chainId', type: 'uint256' },
        { name: 'verifyingContract', type: 'address' },
      ],
      TransferWithAuthorization: [
        { name: 'from', type: 'address' },
        { name: 'to', type: 'address' },
        { name: 'value', type: 'uint256' },
        { name: 'validAfter', type: 'uint256' },
        { name: 'validBefore', type: 'uint256' },
        { name: 'nonce', type: 'bytes32' },
      ],
    },
    primaryType: 'TransferWithAuthorization',
    domain: {
      name: extra.name,
      version: extra.version,
      chainId: option.chainId,
      verifyingContract: getAddress(String(requirement.asset)),
    },
    message: authorization,
  };
  onStep(`Confirm the payment of ${option.price} in ${wallet.name}…`);
  let signature: unknown;
  try {
    signature = await wallet.provider.request({
      method: 'eth_signTypedData_v4',
      params: [from, JSON.stringify(typedData)],
    });
  } catch (error) {
    throw refusal(wallet, 'did not sign', error);
  }
  if (typeof signature !== 'string' || !/^0x[0-9a-fA-F]+$/.test(signature)) {
    throw new WalletRefusal(`${wallet.name} returned no signature.`);
  }
  return { authorization, signature };
}

function refusal(wallet: EvmWallet, what: string, error: unknown): WalletRefusal {
  // EIP-1193 4001: the user rejected the request.
  const code = (error as { code?: unknown } | null)?.code;
  const reason = code === 4001 ? 'you declined the request' : messageOf(error);
  return new WalletRefusal(`${wallet.name} ${what}: ${reason}`);
}
