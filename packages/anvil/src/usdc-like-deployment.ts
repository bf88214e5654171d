import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  type Address,
  concat,
  encodeAbiParameters,
  getContractAddress,
  type Hex,
  isAddress,
  keccak256,
  toHex,
} from 'viem';
import type { AnvilClient } from './anvil-client.ts';
import { CREATE2_DEPLOYER } from './canonical-addresses.ts';
import { USDC_LIKE_BYTECODE, USDC_LIKE_RUNTIME_CODE_HASH } from './usdc-like-artifact.ts';

/** Through CREATE2_DEPLOYER, the token's address depends only on its code and owner. */
const SALT = keccak256(toHex('gate402 USDC-like token'));

/**
 * Deploys the USDC-like token on a local chain unless it is already there. Idempotent by construction:
 * with the state kept from an earlier run, the CREATE2 address already holds the same runtime code,
 * and nothing is sent. The address is also written to `recordFile` for operators and tools.
 */
export async function ensureUsdcLike(
  client: AnvilClient,
  options: { owner: Address; recordFile: string; network: string },
): Promise<{ address: Address; deployed: boolean }> {
  const initCode = concat([
    USDC_LIKE_BYTECODE as Hex,
    encodeAbiParameters([{ type: 'address' }], [options.owner]),
  ]);
  const address = getContractAddress({
    opcode: 'CREATE2',
    from: CREATE2_DEPLOYER,
    salt: SALT,
    bytecode: initCode,
  });
  let deployed = false;
  if (!(await hasTokenCode(client, address))) {
    if (!(await hasCode(client, CREATE2_DEPLOYER))) {
      throw new Error('the chain has no CREATE2 deployer (anvil installs one at genesis)');
    }
    const hash = await client.sendTransaction({
      account: options.owner,
      chain: null,
      to: CREATE2_DEPLOYER,
      data: concat([SALT, initCode]),
    });
    const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    if (receipt.status !== 'success' || !(await hasTokenCode(client, address))) {
      throw new Error(`deploying the USDC-like token failed (${hash})`);
    }
    deployed = true;
  }
  await mkdir(dirname(options.recordFile), { recursive: true });
  await writeFile(
    options.recordFile,
    `${JSON.stringify({ [options.network]: { USDC: address } }, null, 2)}\n`,
  );
  return { address, deployed };
}

/**
 * The USDC-like token recorded for `network` in `recordFile` by an earlier `ensureUsdcLike`, if the chain
 * holds its code there: how another process (the CLI faucet) finds the token without deploying anything.
 */
export async function recordedUsdcLike(
  client: AnvilClient,
  options: { recordFile: string; network: string },
): Promise<Address | undefined> {
  let record: unknown;
  try {
    record = JSON.parse(await readFile(options.recordFile, 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const address = (record as Record<string, { USDC?: unknown } | undefined> | null)?.[options.network]?.USDC;
  if (typeof address !== 'string' || !isAddress(address)) return undefined;
  return (await hasTokenCode(client, address)) ? address : undefined;
}

async function hasCode(client: AnvilClient, address: Address): Promise<boolean> {
  const code = await client.getCode({ address });
  return code !== undefined && code !== '0x';
}

async function hasTokenCode(client: AnvilClient, address: Address): Promise<boolean> {
  const code = await client.getCode({ address });
  return code !== undefined && code !== '0x' && keccak256(code) === USDC_LIKE_RUNTIME_CODE_HASH;
}
