import { bytesToHex, createPublicClient, type Hex, http, parseTransaction } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';

/** A wallet the gateway never sees the key of: what a local-mode caller on EVM holds. */
export interface EvmLocalWallet {
  readonly address: string;
  readonly privateKey: Hex;
}

export function newEvmLocalWallet(): EvmLocalWallet {
  const privateKey = generatePrivateKey();
  return { address: privateKeyToAccount(privateKey).address, privateKey };
}

/**
 * What a local-mode caller does with an unsigned EIP-1559 transaction from /transaction/send or
 * /transaction/receive: decode the base64 RLP bytes, sign them with its own key (viem), broadcast them
 * through its own RPC endpoint and wait for the receipt. Returns the transaction hash.
 */
export async function signAndBroadcastEvm(rpcUrl: string, base64: string, privateKey: Hex): Promise<Hex> {
  const signed = await signEvm(base64, privateKey);
  const client = createPublicClient({ transport: http(rpcUrl), cacheTime: 0 });
  const hash = await client.sendRawTransaction({ serializedTransaction: signed });
  await client.waitForTransactionReceipt({ hash, pollingInterval: 20 });
  return hash;
}

/** The signed wire bytes, without broadcasting them. */
export async function signEvm(base64: string, privateKey: Hex): Promise<Hex> {
  const transaction = parseTransaction(bytesToHex(Buffer.from(base64, 'base64')));
  if (transaction.type !== 'eip1559')
    throw new Error(`expected an EIP-1559 transaction: ${transaction.type}`);
  return privateKeyToAccount(privateKey).signTransaction(transaction);
}
