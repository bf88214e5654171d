import { hexToBytes } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';

/** A new EVM key pair: a 32-byte secp256k1 secret and its EIP-55 checksummed address. */
export function generateEvmKeypair(): { address: string; secretKey: Uint8Array } {
  const privateKey = generatePrivateKey();
  return { address: privateKeyToAccount(privateKey).address, secretKey: hexToBytes(privateKey) };
}
