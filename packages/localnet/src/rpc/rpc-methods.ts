// Every HTTP JSON-RPC method the localnet answers, by name.
import { accountMethods } from './methods/account-methods.ts';
import { blockMethods } from './methods/block-methods.ts';
import { clusterMethods } from './methods/cluster-methods.ts';
import { economicsMethods } from './methods/economics-methods.ts';
import { testHookMethods } from './methods/test-hook-methods.ts';
import { transactionMethods } from './methods/transaction-methods.ts';
import { validatorMethods } from './methods/validator-methods.ts';
import type { RpcMethod } from './rpc-method.ts';

export const rpcMethods: Readonly<Record<string, RpcMethod>> = {
  ...clusterMethods,
  ...accountMethods,
  ...transactionMethods,
  ...blockMethods,
  ...validatorMethods,
  ...economicsMethods,
  ...testHookMethods,
};
