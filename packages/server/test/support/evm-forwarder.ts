import {
  type Address,
  concat,
  createPublicClient,
  createTestClient,
  createWalletClient,
  getAddress,
  type Hex,
  http,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';

/**
 * The smallest wrapper there is, written for these tests in raw EVM bytecode: its calldata is a 20-byte
 * target address followed by the inner calldata, which it passes on verbatim. It calls the target with
 * all its gas and no value; when the inner call fails it reverts with the inner call's revert data,
 * otherwise it stops. So a call it forwards starts at byte 20 of the carrier's input, not at 0, as in
 * any wrapper (multicall, smart account, bundle) that carries a call as data of its own.
 *
 * Calldata shorter than 20 bytes makes the length underflow and CALLDATACOPY run out of gas: a revert.
 *
 * Runtime code, offset: bytes  mnemonic          stack afterwards (top first)     why
 *   00: 36       CALLDATASIZE                     [size]
 *   01: 60 14    PUSH1 20                         [20, size]
 *   03: 90       SWAP1                            [size, 20]
 *   04: 03       SUB                              [n]                          n = size - 20, inner length
 *   05: 80       DUP1                             [n, n]
 *   06: 60 14    PUSH1 20                         [20, n, n]
 *   08: 60 00    PUSH1 0                          [0, 20, n, n]
 *   0a: 37       CALLDATACOPY                     [n]                          memory[0..n) = calldata[20..)
 *   0b: 60 00    PUSH1 0                          [0, n]                       CALL's retSize
 *   0d: 60 00    PUSH1 0                          [0, 0, n]                    CALL's retOffset
 *   0f: 82       DUP3                             [n, 0, 0, n]                 CALL's argsSize
 *   10: 60 00    PUSH1 0                          [0, n, 0, 0, n]              CALL's argsOffset
 *   12: 60 00    PUSH1 0                          [0, 0, n, 0, 0, n]           CALL's value
 *   14: 60 00    PUSH1 0                          [0, 0, 0, n, 0, 0, n]
 *   16: 35       CALLDATALOAD                     [word, 0, 0, n, 0, 0, n]     calldata[0..32)
 *   17: 60 60    PUSH1 96                         [96, word, …]
 *   19: 1c       SHR                              [target, 0, 0, n, 0, 0, n]   word >> 96: the first 20 bytes
 *   1a: 5a       GAS                              [gas, target, 0, 0, n, 0, 0, n]
 *   1b: f1       CALL                             [success, n]
 *   1c: 3d       RETURNDATASIZE                   [rds, success, n]
 *   1d: 60 00    PUSH1 0                          [0, rds, success, n]
 *   1f: 80       DUP1                             [0, 0, rds, success, n]
 *   20: 3e       RETURNDATACOPY                   [success, n]                 memory[0..rds) = return data
 *   21: 60 28    PUSH1 0x28                       [0x28, success, n]
 *   23: 57       JUMPI                            [n]                          to 0x28 if the call succeeded
 *   24: 3d       RETURNDATASIZE                   [rds, n]
 *   25: 60 00    PUSH1 0                          [0, rds, n]
 *   27: fd       REVERT                                                        memory[0..rds): the inner revert
 *   28: 5b       JUMPDEST
 *   29: 00       STOP
 */
export const FORWARDER_RUNTIME_CODE: Hex =
  '0x366014900380601460003760006000826000600060003560601c5af13d6000803e6028573d6000fd5b00';

/**
 * Creation code: returns the 42 (0x2a) runtime bytes that follow its own 11 (0x0b).
 *   00: 60 2a    PUSH1 42                         [42]
 *   02: 80       DUP1                             [42, 42]
 *   03: 60 0b    PUSH1 11                         [11, 42, 42]
 *   05: 60 00    PUSH1 0                          [0, 11, 42, 42]
 *   07: 39       CODECOPY                         [42]                         memory[0..42) = code[11..53)
 *   08: 60 00    PUSH1 0                          [0, 42]
 *   0a: f3       RETURN                                                        memory[0..42): the runtime
 */
export const FORWARDER_INIT_CODE: Hex = concat(['0x602a80600b6000396000f3', FORWARDER_RUNTIME_CODE]);

/** The forwarder's calldata for calling `target` with `data`. */
export function forwardedCall(target: Address, data: Hex): Hex {
  return concat([getAddress(target), data]);
}

/** Deploys the forwarder on the anvil at `rpcUrl` from a new funded account; its address. */
export async function deployForwarder(rpcUrl: string): Promise<Address> {
  const deployer = privateKeyToAccount(generatePrivateKey());
  await createTestClient({ mode: 'anvil', transport: http(rpcUrl) }).setBalance({
    address: deployer.address,
    value: 10n ** 18n,
  });
  const wallet = createWalletClient({ account: deployer, transport: http(rpcUrl) });
  const hash = await wallet.sendTransaction({ data: FORWARDER_INIT_CODE, chain: null });
  const chain = createPublicClient({ transport: http(rpcUrl), cacheTime: 0 });
  const receipt = await chain.waitForTransactionReceipt({ hash, pollingInterval: 20 });
  const address = receipt.contractAddress;
  if (receipt.status !== 'success' || address == null)
    throw new Error(`deploying the forwarder failed (${hash})`);
  const code = await chain.getCode({ address });
  if (code !== FORWARDER_RUNTIME_CODE) throw new Error(`the forwarder's code is ${code ?? 'absent'}`);
  return address;
}
