import { type Address, concat, type Hex, keccak256 } from 'viem';
import type { AnvilClient } from './anvil-client.ts';
import { CREATE2_DEPLOYER, EXACT_PERMIT2_PROXY_ADDRESS, PERMIT2_ADDRESS } from './canonical-addresses.ts';
import { PERMIT2_CREATION_CODE } from './permit2-artifact.ts';
import {
  EXACT_PERMIT2_PROXY_RUNTIME_CODE,
  EXACT_PERMIT2_PROXY_RUNTIME_CODE_HASH,
} from './permit2-proxy-artifact.ts';

/** The salt of Permit2's canonical deployment through the CREATE2 deployer (a public deployment parameter). */
export const PERMIT2_SALT: Hex = '0x0000000000000000000000000000000000000000d3af2663da51c10215000000';

/**
 * Puts Permit2 and the x402 `exact` Permit2 proxy on a local anvil, at their canonical addresses, unless
 * they are already there (state kept from an earlier run):
 * - Permit2 is deployed as on every public chain: its published creation code (permit2-artifact.ts, taken
 *   from the npm package `@uniswap/uniswapx-sdk` at build time and checked to deploy to PERMIT2_ADDRESS,
 *   which proves it is Permit2's own) through the CREATE2 deployer with the canonical salt.
 * - The proxy is gate402's implementation of x402's proxy interface (contracts/ExactPermit2Proxy.sol),
 *   placed with anvil_setCode: the canonical address is a CREATE2 result of x402's own bytecode, which
 *   no npm package ships.
 */
export async function ensurePermit2(
  client: AnvilClient,
  options: { deployer: Address },
): Promise<{ permit2Deployed: boolean; proxyPlaced: boolean }> {
  let permit2Deployed = false;
  if (!(await hasCode(client, PERMIT2_ADDRESS))) {
    const hash = await client.sendTransaction({
      account: options.deployer,
      chain: null,
      to: CREATE2_DEPLOYER,
      data: concat([PERMIT2_SALT, PERMIT2_CREATION_CODE as Hex]),
    });
    const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    if (receipt.status !== 'success' || !(await hasCode(client, PERMIT2_ADDRESS))) {
      throw new Error(`deploying Permit2 failed (${hash})`);
    }
    permit2Deployed = true;
  }
  let proxyPlaced = false;
  const proxyCode = await client.getCode({ address: EXACT_PERMIT2_PROXY_ADDRESS });
  if (proxyCode === undefined || keccak256(proxyCode) !== EXACT_PERMIT2_PROXY_RUNTIME_CODE_HASH) {
    await client.setCode({
      address: EXACT_PERMIT2_PROXY_ADDRESS,
      bytecode: EXACT_PERMIT2_PROXY_RUNTIME_CODE as Hex,
    });
    proxyPlaced = true;
  }
  return { permit2Deployed, proxyPlaced };
}

async function hasCode(client: AnvilClient, address: Address): Promise<boolean> {
  const code = await client.getCode({ address });
  return code !== undefined && code !== '0x';
}
