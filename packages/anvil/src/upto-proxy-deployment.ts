import { type Hex, keccak256 } from 'viem';
import type { AnvilClient } from './anvil-client.ts';
import { UPTO_PERMIT2_PROXY_ADDRESS } from './canonical-addresses.ts';
import {
  UPTO_PERMIT2_PROXY_RUNTIME_CODE,
  UPTO_PERMIT2_PROXY_RUNTIME_CODE_HASH,
} from './upto-proxy-artifact.ts';

/**
 * Puts x402's `upto` Permit2 proxy on a local anvil at its canonical address, unless that exact code is
 * already there (state kept from an earlier run). It is gate402's implementation of x402's upto proxy
 * interface (contracts/UptoPermit2Proxy.sol), placed with anvil_setCode as the exact proxy is: the
 * canonical address is a CREATE2 result of x402's own bytecode, which no npm package ships. Permit2
 * itself is ensurePermit2's. Returns whether it placed the code.
 */
export async function ensureUptoPermit2Proxy(client: AnvilClient): Promise<boolean> {
  const code = await client.getCode({ address: UPTO_PERMIT2_PROXY_ADDRESS });
  if (code !== undefined && code !== '0x' && keccak256(code) === UPTO_PERMIT2_PROXY_RUNTIME_CODE_HASH)
    return false;
  await client.setCode({
    address: UPTO_PERMIT2_PROXY_ADDRESS,
    bytecode: UPTO_PERMIT2_PROXY_RUNTIME_CODE as Hex,
  });
  return true;
}
