import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { USDC_LIKE_ABI } from '@gate402/anvil';
import {
  type Address,
  createPublicClient,
  createWalletClient,
  type Hex,
  http,
  type PublicClient,
  parseSignature,
  toHex,
} from 'viem';
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';

const ETH = 10n ** 18n;
const USDC = 1_000_000n;

const TRANSFER_WITH_AUTHORIZATION_TYPES = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const;

describe('the USDC-like token on the embedded chain', () => {
  let evm: TestEvm;
  let client: PublicClient;
  let token: Address;
  let payer: PrivateKeyAccount;
  /** Submits authorizations and pays their gas, as an x402 facilitator does. */
  let facilitator: PrivateKeyAccount;

  const balanceOf = (owner: Address) =>
    client.readContract({ address: token, abi: USDC_LIKE_ABI, functionName: 'balanceOf', args: [owner] });
  const now = async () => (await client.getBlock()).timestamp;

  /** Sends a contract call as `account` and answers with the receipt status, or the revert reason. */
  async function call(
    account: PrivateKeyAccount,
    functionName: string,
    args: readonly unknown[],
  ): Promise<'success' | string> {
    const wallet = createWalletClient({ account, transport: http(evm.anvil.rpcUrl) });
    try {
      const { request } = await client.simulateContract({
        account,
        address: token,
        abi: USDC_LIKE_ABI,
        functionName: functionName as 'mint',
        args: args as never,
      });
      const hash = await wallet.writeContract({ ...request, chain: null });
      return (await client.waitForTransactionReceipt({ hash, pollingInterval: 20 })).status;
    } catch (error) {
      return /UsdcLike: [^"\n]+/.exec(String(error))?.[0] ?? String(error);
    }
  }

  async function authorize(options: {
    to: Address;
    value: bigint;
    validAfter?: bigint;
    validBefore?: bigint;
    nonce?: Hex;
    primaryType?: 'TransferWithAuthorization' | 'ReceiveWithAuthorization';
  }) {
    const message = {
      from: payer.address,
      to: options.to,
      value: options.value,
      validAfter: options.validAfter ?? 0n,
      validBefore: options.validBefore ?? (await now()) + 600n,
      nonce: options.nonce ?? toHex(randomBytes(32)),
    };
    const primaryType = options.primaryType ?? 'TransferWithAuthorization';
    const signature = await payer.signTypedData({
      domain: { name: 'USD Coin', version: '2', chainId: 31337, verifyingContract: token },
      types: { [primaryType]: TRANSFER_WITH_AUTHORIZATION_TYPES.TransferWithAuthorization },
      primaryType,
      message,
    });
    const { v, r, s } = parseSignature(signature);
    const args = [
      message.from,
      message.to,
      message.value,
      message.validAfter,
      message.validBefore,
      message.nonce,
    ] as const;
    return {
      message,
      signature,
      vrs: [...args, Number(v), r, s] as const,
      bytes: [...args, signature] as const,
    };
  }

  before(async () => {
    evm = await startTestEvm();
    client = createPublicClient({ transport: http(evm.anvil.rpcUrl) });
    token = evm.usdc.address as Address;
    payer = privateKeyToAccount(generatePrivateKey());
    facilitator = privateKeyToAccount(generatePrivateKey());
    await evm.adapter.faucet?.fundNative(facilitator.address, ETH);
    await evm.adapter.faucet?.fundNative(payer.address, ETH);
    await evm.adapter.faucet?.fundToken('USDC', payer.address, 100n * USDC);
  });
  after(async () => {
    await evm.close();
    evm.dispose();
  });

  it('is USD Coin, USDC, 6 decimals, EIP-712 version 2, owned by the operator', async () => {
    const read = (functionName: 'name' | 'symbol' | 'decimals' | 'version' | 'owner') =>
      client.readContract({ address: token, abi: USDC_LIKE_ABI, functionName });
    assert.equal(await read('name'), 'USD Coin');
    assert.equal(await read('symbol'), 'USDC');
    assert.equal(await read('decimals'), 6);
    assert.equal(await read('version'), '2');
    assert.equal(await read('owner'), evm.operator);
    const [, name, version, chainId, verifyingContract] = await client.readContract({
      address: token,
      abi: USDC_LIKE_ABI,
      functionName: 'eip712Domain',
    });
    assert.deepEqual([name, version, chainId, verifyingContract], ['USD Coin', '2', 31337n, token]);
  });

  it('mints only for its owner', async () => {
    const someone = privateKeyToAccount(generatePrivateKey());
    const supply = await client.readContract({
      address: token,
      abi: USDC_LIKE_ABI,
      functionName: 'totalSupply',
    });
    assert.equal(await call(facilitator, 'mint', [someone.address, 5n]), 'UsdcLike: caller is not the owner');
    await evm.adapter.faucet?.fundToken('USDC', someone.address, 1_234_567n);
    assert.equal(await balanceOf(someone.address), 1_234_567n);
    assert.equal(
      await client.readContract({ address: token, abi: USDC_LIKE_ABI, functionName: 'totalSupply' }),
      supply + 1_234_567n,
    );
  });

  it('moves funds with a transferWithAuthorization signed by viem, once', async () => {
    const seller = privateKeyToAccount(generatePrivateKey()).address;
    const before = await balanceOf(payer.address);
    const auth = await authorize({ to: seller, value: 2_500_000n });
    assert.equal(
      await client.readContract({
        address: token,
        abi: USDC_LIKE_ABI,
        functionName: 'authorizationState',
        args: [payer.address, auth.message.nonce],
      }),
      false,
    );
    assert.equal(await call(facilitator, 'transferWithAuthorization', auth.vrs), 'success');
    assert.equal(await balanceOf(seller), 2_500_000n);
    assert.equal(await balanceOf(payer.address), before - 2_500_000n);
    assert.equal(
      await client.readContract({
        address: token,
        abi: USDC_LIKE_ABI,
        functionName: 'authorizationState',
        args: [payer.address, auth.message.nonce],
      }),
      true,
    );

    assert.equal(
      await call(facilitator, 'transferWithAuthorization', auth.vrs),
      'UsdcLike: authorization is used or canceled',
    );
    assert.equal(
      await call(facilitator, 'transferWithAuthorization', auth.bytes),
      'UsdcLike: authorization is used or canceled',
    );
    assert.equal(await balanceOf(seller), 2_500_000n, 'paid once');
  });

  it('accepts the bytes-signature form and refuses a tampered amount', async () => {
    const seller = privateKeyToAccount(generatePrivateKey()).address;
    const auth = await authorize({ to: seller, value: 1_000_000n });
    const tampered = [...auth.bytes] as unknown[];
    tampered[2] = 9_000_000n;
    assert.equal(
      await call(facilitator, 'transferWithAuthorization', tampered),
      'UsdcLike: invalid signature',
    );
    assert.equal(await call(facilitator, 'transferWithAuthorization', auth.bytes), 'success');
    assert.equal(await balanceOf(seller), 1_000_000n);
  });

  it('refuses an expired or not yet valid authorization', async () => {
    const seller = privateKeyToAccount(generatePrivateKey()).address;
    const t = await now();
    const expired = await authorize({ to: seller, value: 1n, validBefore: t - 1n });
    assert.equal(
      await call(facilitator, 'transferWithAuthorization', expired.vrs),
      'UsdcLike: authorization is expired',
    );
    const early = await authorize({ to: seller, value: 1n, validAfter: t + 3_600n });
    assert.equal(
      await call(facilitator, 'transferWithAuthorization', early.vrs),
      'UsdcLike: authorization is not yet valid',
    );
    assert.equal(await balanceOf(seller), 0n);
  });

  it('lets only the payee submit a receiveWithAuthorization', async () => {
    const seller = privateKeyToAccount(generatePrivateKey());
    await evm.adapter.faucet?.fundNative(seller.address, ETH);
    const auth = await authorize({
      to: seller.address,
      value: 750_000n,
      primaryType: 'ReceiveWithAuthorization',
    });
    assert.equal(
      await call(facilitator, 'receiveWithAuthorization', auth.vrs),
      'UsdcLike: caller must be the payee',
    );
    assert.equal(await call(seller, 'receiveWithAuthorization', auth.vrs), 'success');
    assert.equal(await balanceOf(seller.address), 750_000n);
  });

  it('sets an allowance with an EIP-2612 permit, once', async () => {
    const spender = facilitator.address;
    const deadline = (await now()) + 600n;
    const nonce = await client.readContract({
      address: token,
      abi: USDC_LIKE_ABI,
      functionName: 'nonces',
      args: [payer.address],
    });
    const signature = await payer.signTypedData({
      domain: { name: 'USD Coin', version: '2', chainId: 31337, verifyingContract: token },
      types: {
        Permit: [
          { name: 'owner', type: 'address' },
          { name: 'spender', type: 'address' },
          { name: 'value', type: 'uint256' },
          { name: 'nonce', type: 'uint256' },
          { name: 'deadline', type: 'uint256' },
        ],
      },
      primaryType: 'Permit',
      message: { owner: payer.address, spender, value: 3_000_000n, nonce, deadline },
    });
    const { v, r, s } = parseSignature(signature);
    const args = [payer.address, spender, 3_000_000n, deadline, Number(v), r, s];
    assert.equal(await call(facilitator, 'permit', args), 'success');
    assert.equal(
      await client.readContract({
        address: token,
        abi: USDC_LIKE_ABI,
        functionName: 'allowance',
        args: [payer.address, spender],
      }),
      3_000_000n,
    );
    assert.equal(
      await call(facilitator, 'permit', args),
      'UsdcLike: invalid signature',
      'the nonce moved on',
    );

    const receiver = privateKeyToAccount(generatePrivateKey()).address;
    assert.equal(await call(facilitator, 'transferFrom', [payer.address, receiver, 2_000_000n]), 'success');
    assert.equal(await balanceOf(receiver), 2_000_000n);
    assert.equal(
      await call(facilitator, 'transferFrom', [payer.address, receiver, 1_000_001n]),
      'UsdcLike: transfer amount exceeds allowance',
    );
  });
});
