import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { type Address, concat, getAddress, getContractAddress, type Hex, keccak256 } from 'viem';
import { ChainError } from '../chain-error.ts';
import type { AnvilClient } from './anvil-client.ts';
import { EXACT_PERMIT2_PROXY_ADDRESS, PERMIT2_ADDRESS } from './permit2-addresses.ts';
import {
  EXACT_PERMIT2_PROXY_RUNTIME_CODE,
  EXACT_PERMIT2_PROXY_RUNTIME_CODE_HASH,
} from './permit2-proxy-artifact.ts';
import { CREATE2_DEPLOYER } from './usdc-like-deployment.ts';

/** The salt of Permit2's canonical deployment through the CREATE2 deployer (a public deployment parameter). */
const PERMIT2_SALT: Hex = '0x0000000000000000000000000000000000000000d3af2663da51c10215000000';

/**
 * Puts Permit2 and the x402 `exact` Permit2 proxy on a local anvil, at their canonical addresses, unless
 * they are already there (state kept from an earlier run):
 * - Permit2 is deployed as on every public chain: its published creation code (shipped in the npm
 *   package `@uniswap/uniswapx-sdk`) through the CREATE2 deployer with the canonical salt. The code is
 *   used only if that lands exactly on PERMIT2_ADDRESS, which proves it is Permit2's own.
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
    const creationCode = await permit2CreationCode();
    const hash = await client.sendTransaction({
      account: options.deployer,
      chain: null,
      to: CREATE2_DEPLOYER,
      data: concat([PERMIT2_SALT, creationCode]),
    });
    const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    if (receipt.status !== 'success' || !(await hasCode(client, PERMIT2_ADDRESS))) {
      throw new ChainError('rejected', `deploying Permit2 failed (${hash})`);
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

/**
 * Permit2's creation code, read from the typechain factory `@uniswap/uniswapx-sdk` ships (its ESM build
 * cannot be imported by Node and its CommonJS one would load ethers, so the file is read as text), and
 * checked to be the canonical one by the address it deploys to.
 */
async function permit2CreationCode(): Promise<Hex> {
  const entry = createRequire(import.meta.url).resolve('@uniswap/uniswapx-sdk');
  const factory = join(dirname(entry), 'contracts', 'factories', 'Permit2__factory.js');
  const code = /_bytecode\s*=\s*"(0x[0-9a-fA-F]+)"/.exec(await readFile(factory, 'utf8'))?.[1] as
    | Hex
    | undefined;
  const lands =
    code === undefined
      ? undefined
      : getContractAddress({ opcode: 'CREATE2', from: CREATE2_DEPLOYER, salt: PERMIT2_SALT, bytecode: code });
  if (code === undefined || lands === undefined || getAddress(lands) !== PERMIT2_ADDRESS) {
    throw new Error(
      `${factory} does not hold Permit2's canonical creation code (it would deploy to ${lands ?? 'nothing'}, not ${PERMIT2_ADDRESS})`,
    );
  }
  return code;
}

async function hasCode(client: AnvilClient, address: Address): Promise<boolean> {
  const code = await client.getCode({ address });
  return code !== undefined && code !== '0x';
}
