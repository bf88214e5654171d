import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { bytesToHex, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { signWithSecretKey } from '../../src/chains/solana/solana-keypair.ts';
import { encodeBase58 } from '../../src/domain/base58.ts';
import type { TestGateway } from './test-gateway.ts';

/** The key of an address a test controls: a Solana key pair (64-byte secret) or an EVM private key. */
export type AddressKey =
  | { readonly address: string; readonly secretKey: Uint8Array }
  | { readonly address: string; readonly privateKey: Hex };

export function chainOf(key: AddressKey): 'solana' | 'evm' {
  return 'privateKey' in key ? 'evm' : 'solana';
}

/**
 * What a wallet answers to "sign this message": Solana wallet-standard signMessage (ed25519 over the
 * UTF-8 bytes, written base58 here), EVM personal_sign (EIP-191, 0x hex).
 */
export async function signChallenge(key: AddressKey, text: string): Promise<string> {
  if ('privateKey' in key) return privateKeyToAccount(key.privateKey).signMessage({ message: text });
  return encodeBase58(signWithSecretKey(key.secretKey, new TextEncoder().encode(text)));
}

/**
 * Registers `key`'s address as a watch-only wallet of the caller with `apiKey`, as a seller would:
 * POST /wallets/challenge, sign the text, POST /wallets with both. Answers the last response (or the
 * challenge's, when that was refused). `spelling` sends the address written another way (EVM case).
 */
export async function watchAddress(
  gw: { readonly app: FastifyInstance },
  apiKey: string,
  key: AddressKey,
  options: { readonly spelling?: string; readonly network?: string } = {},
): Promise<LightMyRequestResponse> {
  const chain = chainOf(key);
  const address = options.spelling ?? key.address;
  const headers = { authorization: `Bearer ${apiKey}` };
  const challenge = await gw.app.inject({
    method: 'POST',
    url: '/wallets/challenge',
    headers,
    payload: { chain, address },
  });
  if (challenge.statusCode !== 200) return challenge;
  const text = challenge.json().challenge as string;
  return gw.app.inject({
    method: 'POST',
    url: '/wallets',
    headers,
    payload: {
      chain,
      address,
      watchOnly: true,
      challenge: text,
      signature: await signChallenge(key, text),
      ...(options.network === undefined ? {} : { network: options.network }),
    },
  });
}

/** The key of a custodial wallet of `gw`, read as the gateway would sign with it: for a test that
 * registers that address as watch-only on another gateway. */
export async function custodialKeyOf(
  gw: TestGateway,
  accountId: string,
  address: string,
): Promise<AddressKey> {
  const { wallet, secretKey } = await gw.services.wallets.signer(accountId, address);
  return wallet.family === 'evm'
    ? { address: wallet.address, privateKey: bytesToHex(secretKey) }
    : { address: wallet.address, secretKey };
}
