// @gate402/anvil: the embedded EVM chain — anvil launched from npm, a write-ahead journal of its blocks,
// and the contracts gate402 places on it (a USDC-like token, Permit2, x402's exact and upto Permit2 proxies).

export type { AnvilClient } from './anvil-client.ts';
export type { JournalEntry } from './anvil-journal.ts';
export { AnvilJournal, entriesToKeep, readJournal, replayJournal } from './anvil-journal.ts';
export type { AnvilOptions, AnvilProcess } from './anvil-process.ts';
export { ANVIL_CHAIN_ID, anvilBinaryPath, startAnvil } from './anvil-process.ts';
export {
  CREATE2_DEPLOYER,
  EXACT_PERMIT2_PROXY_ADDRESS,
  PERMIT2_ADDRESS,
  UPTO_PERMIT2_PROXY_ADDRESS,
} from './canonical-addresses.ts';
export { PERMIT2_CREATION_CODE } from './permit2-artifact.ts';
export { ensurePermit2, PERMIT2_SALT } from './permit2-deployment.ts';
export {
  EXACT_PERMIT2_PROXY_ABI,
  EXACT_PERMIT2_PROXY_RUNTIME_CODE,
  EXACT_PERMIT2_PROXY_RUNTIME_CODE_HASH,
} from './permit2-proxy-artifact.ts';
export {
  UPTO_PERMIT2_PROXY_ABI,
  UPTO_PERMIT2_PROXY_RUNTIME_CODE,
  UPTO_PERMIT2_PROXY_RUNTIME_CODE_HASH,
} from './upto-proxy-artifact.ts';
export { ensureUptoPermit2Proxy } from './upto-proxy-deployment.ts';
export { USDC_LIKE_ABI, USDC_LIKE_BYTECODE, USDC_LIKE_RUNTIME_CODE_HASH } from './usdc-like-artifact.ts';
export { ensureUsdcLike, recordedUsdcLike } from './usdc-like-deployment.ts';
