import type { Config } from '../config.ts';
import type { ChainFamily } from '../domain/address.ts';
import type { ChainFamilyModule } from './chain-family.ts';
import { evmFamily } from './evm/evm-family.ts';
import { solanaFamily } from './solana/solana-family.ts';

/** Every chain family the gateway speaks, in the order their chains are listed. */
export const FAMILY_MODULES: readonly ChainFamilyModule<Config>[] = [solanaFamily, evmFamily];

/** The module of `family`; every family name the address rules know has one. */
export function chainFamily(family: ChainFamily): ChainFamilyModule<Config> {
  const module = FAMILY_MODULES.find((m) => m.family === family);
  if (module === undefined) throw new Error(`no chain family module for ${family}`);
  return module;
}

/** The module whose CAIP-2 namespace `network` is in; undefined for another namespace. */
export function chainFamilyOfNetwork(network: string): ChainFamilyModule<Config> | undefined {
  const namespace = network.split(':', 1)[0];
  return FAMILY_MODULES.find((m) => m.caip2Namespace === namespace);
}

/** Where a person can look at a transaction, or undefined when the network has no public explorer. */
export function explorerTransactionUrl(network: string, id: string): string | undefined {
  const reference = network.slice(network.indexOf(':') + 1);
  return chainFamilyOfNetwork(network)?.explorerTransactionUrl(reference, encodeURIComponent(id));
}
