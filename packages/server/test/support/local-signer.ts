import {
  createKeyPairFromBytes,
  createSolanaRpc,
  getBase64EncodedWireTransaction,
  getSignatureFromTransaction,
  getTransactionDecoder,
  signTransaction,
} from '@solana/kit';

/** What a local-mode caller does with an unsigned transaction: sign with its own key, broadcast itself. */
export async function signAndBroadcast(
  rpcUrl: string,
  base64: string,
  secretKey: Uint8Array,
): Promise<string> {
  const transaction = getTransactionDecoder().decode(Buffer.from(base64, 'base64'));
  const signed = await signTransaction([await createKeyPairFromBytes(secretKey)], transaction);
  await createSolanaRpc(rpcUrl)
    .sendTransaction(getBase64EncodedWireTransaction(signed), { encoding: 'base64' })
    .send();
  return getSignatureFromTransaction(signed);
}
