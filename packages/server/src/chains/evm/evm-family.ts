import { GatewayError } from '../../domain/gateway-error.ts';
import { canonicalAddress } from '../canonical-address.ts';
import type { ChainFamilyModule } from '../chain-family.ts';
import { loopbackUrl } from '../loopback-url.ts';
import { connectEvm } from './connect-evm.ts';
import { EvmAdapter } from './evm-adapter.ts';
import { evmExplorerUrl } from './evm-explorers.ts';
import { ExactEvmScheme } from './exact-evm-scheme.ts';
import { UptoEvmScheme } from './upto-evm-scheme.ts';

/** EVM chains: hex addresses with an optional EIP-55 checksum, transaction hashes, blocks of seconds. */
export const evmFamily: ChainFamilyModule<Parameters<typeof connectEvm>[0]> = {
  family: 'evm',
  connect: async (settings, log, rpcObserver) => {
    const connection = await connectEvm(settings, log, rpcObserver);
    return { adapters: connection.adapters, close: () => connection.close() };
  },
  addressName: 'an EVM address',
  estimatedConfirmation: '2-15 seconds',
  reservedAccount: () => undefined,
  recipientProblem: (address) =>
    hasWrongChecksum(address)
      ? {
          message: 'The recipient address does not match its checksum: it may be mistyped.',
          detail: 'mixes upper and lower case, but not as its EIP-55 checksum does',
        }
      : undefined,
  isTransactionId: (text) => /^0x[0-9a-fA-F]{64}$/.test(text),
  exactScheme: async (chain, feePayer, assets, { now, log }) => {
    const durability = chain instanceof EvmAdapter ? chain.durability : undefined;
    const scheme = new ExactEvmScheme(chain.endpoints, feePayer, chain.info.id, assets, now, durability);
    try {
      if (await scheme.detectPermit2())
        log?.(`x402 facilitator: Permit2 payments offered on ${chain.info.name}`);
    } catch (error) {
      log?.(
        `x402 facilitator: could not look for Permit2 on ${chain.info.name} (${error instanceof Error ? error.message : String(error)}); Permit2 is not offered there`,
      );
    }
    return scheme;
  },
  uptoScheme: async (chain, feePayer, assets, { now, log }) => {
    const durability = chain instanceof EvmAdapter ? chain.durability : undefined;
    const scheme = new UptoEvmScheme(chain.endpoints, feePayer, chain.info.id, assets, now, durability);
    try {
      if (await scheme.detect()) log?.(`x402 facilitator: upto payments offered on ${chain.info.name}`);
    } catch (error) {
      log?.(
        `x402 facilitator: could not look for x402's upto proxy on ${chain.info.name} (${error instanceof Error ? error.message : String(error)}); upto is not offered there`,
      );
    }
    return scheme;
  },
  caip2Namespace: 'eip155',
  signersNamespace: 'eip155:*',
  sellersNameFeePayer: false,
  localStandsInFor: undefined,
  signsTokenDomain: true,
  explorerTransactionUrl: evmExplorerUrl,
  faucetChain: (config) => {
    if (config.evmRpcUrls.length > 0) {
      throw new GatewayError('FORBIDDEN', {
        message:
          'The faucet works only on the embedded anvil, and EVM_RPC_URLS names other networks (unset it to use anvil).',
      });
    }
    const rpcUrl = loopbackUrl('ANVIL_PORT', config.anvilPort);
    return {
      where: 'local EVM chain (anvil)',
      rpcUrl,
      connect: async () => {
        const { connectLocalAnvil } = await import('./connect-local-anvil.ts');
        const anvil = await connectLocalAnvil({
          rpcUrl,
          dataDir: config.dataDir,
          rpcLimits: { timeoutMs: config.rpcTimeoutMs, downMs: config.rpcDownMs },
        });
        if (anvil.adapter === undefined) {
          throw new GatewayError('FORBIDDEN', {
            message: `The faucet works only on anvil (chain id 31337), and something else answers at ${rpcUrl}.`,
          });
        }
        return { adapter: anvil.adapter, tokensRefused: anvil.tokensRefused };
      },
    };
  },
  faucetNativeRefusal: (symbol) => ({ address: `a contract address must accept ${symbol}` }),
};

/**
 * EIP-55: an EVM address written in mixed case carries a checksum, and one that does not match it was
 * mistyped (a payment to it would reach nobody's wallet); one written in a single case carries none.
 */
function hasWrongChecksum(address: string): boolean {
  const hex = address.slice(2);
  return hex !== hex.toLowerCase() && hex !== hex.toUpperCase() && canonicalAddress(address) !== address;
}
