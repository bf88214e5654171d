import { decodeBase58 } from '../../domain/base58.ts';
import type { ChainFamilyModule } from '../chain-family.ts';
import { connectSolana } from './connect-solana.ts';
import { ExactSvmScheme } from './exact-svm-scheme.ts';
import { SOLANA_RESERVED_ACCOUNTS } from './reserved-accounts.ts';
import { SOLANA_DEVNET_ID, solanaExplorerUrl } from './solana-clusters.ts';

/** Solana: base58 addresses and signatures, slots of 400 ms, accounts that must stay rent-exempt. */
export const solanaFamily: ChainFamilyModule<Parameters<typeof connectSolana>[0]> = {
  family: 'solana',
  connect: async (settings, log, rpcObserver) => {
    const connection = await connectSolana(settings, log, rpcObserver);
    return { adapters: [connection.adapter], close: () => connection.close() };
  },
  estimatedConfirmation: '1-2 seconds',
  reservedAccount: (address) =>
    Object.hasOwn(SOLANA_RESERVED_ACCOUNTS, address) ? SOLANA_RESERVED_ACCOUNTS[address] : undefined,
  recipientProblem: () => undefined,
  isTransactionId: (text) => /^[1-9A-HJ-NP-Za-km-z]{64,88}$/.test(text) && decodeBase58(text)?.length === 64,
  exactScheme: async (chain, feePayer, assets) =>
    new ExactSvmScheme(chain.endpoints, [feePayer], chain.info.id, assets),
  caip2Namespace: 'solana',
  signersNamespace: 'solana:*',
  sellersNameFeePayer: true,
  localStandsInFor: SOLANA_DEVNET_ID,
  signsTokenDomain: false,
  explorerTransactionUrl: solanaExplorerUrl,
  faucetNativeRefusal: () => ({
    amount: 'an address that holds nothing yet must get at least its rent-exempt minimum',
  }),
};
