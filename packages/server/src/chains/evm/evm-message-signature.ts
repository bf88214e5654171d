import { type Hex, isHex, recoverMessageAddress } from 'viem';

/**
 * True when `signature` is an EIP-191 `personal_sign` signature of `message` (its UTF-8 text) by the
 * EVM address `address`: what MetaMask and every injected wallet's `personal_sign`, viem's
 * `signMessage`, ethers' `signMessage` and `cast wallet sign` produce (0x + 65 bytes hex; EIP-2098's
 * 64-byte compact form also recovers). Externally owned accounts only: a smart-contract wallet
 * (EIP-1271) has no key to recover and would need the chain asked; it does not verify here.
 */
export async function verifyEvmMessageSignature(
  address: string,
  message: string,
  signature: string,
): Promise<boolean> {
  const text = signature.trim();
  if (!isHex(text, { strict: true }) || (text.length !== 132 && text.length !== 130)) return false;
  try {
    const signer = await recoverMessageAddress({ message, signature: text as Hex });
    return signer.toLowerCase() === address.toLowerCase();
  } catch {
    return false; // not a point on the curve, or a malformed recovery byte
  }
}
