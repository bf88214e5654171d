import { type Localnet, type LocalnetOptions, startLocalnet } from '@gate402/localnet';
import { localnetAdapter } from '../../src/chains/solana/connect-solana.ts';
import type { SolanaAdapter } from '../../src/chains/solana/solana-adapter.ts';

export interface TestChain {
  readonly localnet: Localnet;
  readonly adapter: SolanaAdapter;
  close(): Promise<void>;
}

/** Slots from processed to finalized on the test localnet unless a test says otherwise (as on a cluster). */
export const TEST_LOCALNET_FINALIZED_DEPTH = 32;

/** A real Solana localnet on free ports, with fast slots, and the gateway's adapter for it. */
export async function startTestChain(options: LocalnetOptions = {}): Promise<TestChain> {
  const settings = { port: 0, slotMs: 20, finalizedDepth: TEST_LOCALNET_FINALIZED_DEPTH, ...options };
  const localnet = await startLocalnet(settings);
  const adapter = localnetAdapter(localnet, settings.slotMs);
  return {
    localnet,
    adapter,
    close: async () => {
      await adapter.close();
      await localnet.close();
    },
  };
}
