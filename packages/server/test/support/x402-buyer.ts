import { generateKeyPairSigner, getBase58Decoder, type KeyPairSigner } from '@solana/kit';
import { x402Client } from '@x402/core/client';
import type { PaymentPayload, PaymentRequirements, SchemeNetworkClient } from '@x402/core/types';
import { ExactEvmScheme as EvmBuyerScheme } from '@x402/evm/exact/client';
import { ExactSvmScheme as SvmBuyerScheme } from '@x402/svm/exact/client';
import { type Address, createPublicClient, createWalletClient, type Hex, http, parseAbi } from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import { createPaymentHeader as createV1PaymentHeader } from 'x402/client';
import { createSigner as createV1Signer } from 'x402/types';
import { SOLANA_DEVNET_ID } from '../../src/x402/network-names.ts';
import type { TestEvm } from './test-anvil.ts';
import type { TestChain } from './test-localnet.ts';

/**
 * What stock x402 buyers send, on the embedded chains: the localnet's USDC reached under devnet's id
 * (its rpcUrl given to the buyer), and anvil's USDC-like token.
 */

/** `exact` for `amount` atomic units of the localnet's USDC; `feePayer` signs for the network fee. */
export function svmExactRequirements(
  chain: TestChain,
  fields: { amount: string; payTo: string; feePayer: string },
): PaymentRequirements {
  return {
    scheme: 'exact',
    network: SOLANA_DEVNET_ID,
    asset: chain.localnet.usdcMint.address,
    amount: fields.amount,
    payTo: fields.payTo,
    maxTimeoutSeconds: 60,
    extra: { feePayer: fields.feePayer },
  };
}

/** `exact` with EIP-3009 for `amount` atomic units of anvil's USDC, with the token's EIP-712 domain. */
export function evmExactRequirements(
  evm: TestEvm,
  fields: { amount: string; payTo: string; maxTimeoutSeconds?: number },
): PaymentRequirements {
  return {
    scheme: 'exact',
    network: evm.adapter.info.id as `eip155:${string}`,
    asset: evm.usdc.address,
    amount: fields.amount,
    payTo: fields.payTo,
    maxTimeoutSeconds: fields.maxTimeoutSeconds ?? 60,
    extra: { name: 'USD Coin', version: '2' },
  };
}

/** What a stock x402 v2 client with `scheme` for the requirements' network sends for them. */
export function stockPayload(
  scheme: SchemeNetworkClient,
  requirements: PaymentRequirements,
  resourceUrl = 'https://shop.example/r',
): Promise<PaymentPayload> {
  return x402Client
    .fromConfig({ schemes: [{ network: requirements.network, client: scheme }], spendControls: false })
    .createPaymentPayload({ x402Version: 2, resource: { url: resourceUrl }, accepts: [requirements] });
}

/** What a stock @x402/svm buyer signing with `buyer` sends for `requirements`. */
export function svmPayload(
  chain: TestChain,
  buyer: KeyPairSigner,
  requirements: PaymentRequirements,
  resourceUrl?: string,
): Promise<PaymentPayload> {
  return stockPayload(
    new SvmBuyerScheme(buyer, { rpcUrl: chain.localnet.rpcUrl }),
    requirements,
    resourceUrl,
  );
}

/** What a stock @x402/evm buyer signing with `buyer` sends for `requirements`. */
export function evmPayload(
  buyer: PrivateKeyAccount,
  requirements: PaymentRequirements,
  resourceUrl?: string,
): Promise<PaymentPayload> {
  return stockPayload(new EvmBuyerScheme(buyer), requirements, resourceUrl);
}

/** A buyer with a fresh key using the x402 1.x client. */
export interface V1SvmBuyer {
  readonly address: string;
  /** The 1.x client's signer, for its fetch wrapper. */
  readonly signer: Awaited<ReturnType<typeof createV1Signer>>;
  /**
   * The X-PAYMENT value it sends for `amount` atomic units of the localnet's USDC (once funded), or of
   * the mint `asset` names. A v1 payload does not repeat the requirements: only its transfer says which.
   */
  paymentHeader(fields: {
    amount: string;
    payTo: string;
    feePayer: string;
    resource: string;
    asset?: string;
  }): Promise<string>;
}

export async function newV1SvmBuyer(chain: TestChain): Promise<V1SvmBuyer> {
  const key = await generateKeyPairSigner(true);
  const publicKey = new Uint8Array(await crypto.subtle.exportKey('raw', key.keyPair.publicKey));
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey('pkcs8', key.keyPair.privateKey));
  // The 1.x signer takes the 64-byte secret key: the private key's 32 bytes, then the public key.
  const signer = await createV1Signer(
    'solana-devnet',
    getBase58Decoder().decode(new Uint8Array([...pkcs8.slice(-32), ...publicKey])),
  );
  return {
    address: key.address,
    signer,
    paymentHeader: (fields) =>
      createV1PaymentHeader(
        signer,
        1,
        {
          scheme: 'exact',
          network: 'solana-devnet',
          maxAmountRequired: fields.amount,
          resource: fields.resource,
          description: '',
          mimeType: 'application/json',
          payTo: fields.payTo,
          maxTimeoutSeconds: 60,
          asset: fields.asset ?? chain.localnet.usdcMint.address,
          extra: { feePayer: fields.feePayer },
        },
        { svmConfig: { rpcUrl: chain.localnet.rpcUrl } },
      ),
  };
}

/** A fetch that keeps every PAYMENT-SIGNATURE value a buyer sends through it, in order, in `sent`. */
export function recordingFetch(): { fetch: typeof fetch; sent: string[] } {
  const sent: string[] = [];
  const recording: typeof fetch = async (input, init) => {
    const header = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    const signature = header.get('payment-signature');
    if (signature !== null) sent.push(signature);
    return fetch(input, init);
  };
  return { fetch: recording, sent };
}

/**
 * A buyer spending the nonce of an EIP-3009 authorization it gave a seller on another authorization
 * with the same nonce — 1 atomic unit to itself — submitted first by `submitter` (which needs gas):
 * the token then emits AuthorizationUsed for (buyer, nonce) though the seller was never paid.
 */
export async function spendNonceOnAnotherAuthorization(
  evm: TestEvm,
  buyer: PrivateKeyAccount,
  authorization: { readonly validAfter: string; readonly validBefore: string; readonly nonce: Hex },
  submitter: PrivateKeyAccount,
): Promise<void> {
  const twin = {
    from: buyer.address,
    to: buyer.address,
    value: 1n,
    validAfter: BigInt(authorization.validAfter),
    validBefore: BigInt(authorization.validBefore),
    nonce: authorization.nonce,
  };
  const signature = await buyer.signTypedData({
    domain: {
      name: 'USD Coin',
      version: '2',
      chainId: Number(evm.adapter.info.id.slice('eip155:'.length)),
      verifyingContract: evm.usdc.address as Address,
    },
    types: {
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
    message: twin,
  });
  const hash = await createWalletClient({
    account: submitter,
    transport: http(evm.anvil.rpcUrl),
  }).writeContract({
    chain: null,
    address: evm.usdc.address as Address,
    abi: parseAbi([
      'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
    ]),
    functionName: 'transferWithAuthorization',
    args: [twin.from, twin.to, twin.value, twin.validAfter, twin.validBefore, twin.nonce, signature],
  });
  const receipt = await createPublicClient({ transport: http(evm.anvil.rpcUrl) }).waitForTransactionReceipt({
    hash,
    pollingInterval: 20,
  });
  if (receipt.status !== 'success') throw new Error('the twin authorization reverted');
}
