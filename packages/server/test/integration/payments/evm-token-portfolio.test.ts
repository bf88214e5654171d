import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Address, createPublicClient, createTestClient, erc20Abi, type Hex, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

/** anvil's preinstalled CREATE2 deployer: a contract, but not an ERC-20. */
const CREATE2_DEPLOYER = '0x4e59b44847b379578588920cA78FbF26c0B4956C';

describe('GET /token/info and GET /portfolio on EVM (anvil, the USDC-like ERC-20)', () => {
  let evm: TestEvm;
  let gw: TestGateway;
  let key: string;

  before(async () => {
    evm = await startTestEvm();
    gw = await startTestGateway({ networks: new NetworkRegistry([evm.adapter]) });
    ({ key } = await gw.newCaller());
  });
  after(async () => {
    await gw.close();
    await evm.close();
    evm.dispose();
  });

  const get = (url: string) => gw.app.inject({ method: 'GET', url, headers: bearer(key) });
  const faucet = (payload: Record<string, unknown>) =>
    gw.app.inject({ method: 'POST', url: '/faucet', headers: bearer(key), payload });
  const totalSupply = () =>
    createPublicClient({ transport: http(evm.anvil.rpcUrl) }).readContract({
      address: evm.usdc.address as Address,
      abi: erc20Abi,
      functionName: 'totalSupply',
    });

  it('describes the ERC-20 exactly: name, symbol, decimals, supply to the atomic unit, owner', async () => {
    const holder = await evm.adapter.generateKeypair();
    assert.equal((await faucet({ address: holder.address, amount: 1234.5, token: 'USDC' })).statusCode, 200);
    const supply = await totalSupply();
    assert.ok(supply >= 1_234_500_000n);

    const res = await get(`/token/info/${evm.usdc.address.toLowerCase()}`);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), {
      address: evm.usdc.address,
      network: 'eip155:31337',
      program: 'erc20',
      decimals: 6,
      supply: supply.toString(),
      uiSupply: Number(supply) / 1e6,
      mintAuthority: evm.operator,
      freezeAuthority: null,
      name: 'USD Coin',
      symbol: 'USDC',
      uri: null,
    });

    // The supply is read from the chain each time: a mint shows at once.
    await faucet({ address: holder.address, amount: 0.000001, token: 'USDC' });
    assert.equal((await get(`/token/info/${evm.usdc.address}`)).json().supply, (supply + 1n).toString());
  });

  it('answers 404 TOKEN_NOT_FOUND for an account without code and a contract that is no ERC-20', async () => {
    const nobody = await evm.adapter.generateKeypair();
    for (const address of [nobody.address, CREATE2_DEPLOYER]) {
      const res = await get(`/token/info/${address}`);
      assert.equal(res.statusCode, 404, address);
      assert.equal(res.json().error.code, 'TOKEN_NOT_FOUND');
      assert.deepEqual(res.json().error.details, { mint_address: 'is not a token mint' });
    }
    const malformed = await get('/token/info/0x1234');
    assert.equal(malformed.statusCode, 400);
    assert.equal(malformed.json().error.code, 'INVALID_PARAMETERS');
    const wrongNetwork = await get(`/token/info/${evm.usdc.address}?network=eip155:8453`);
    assert.equal(wrongNetwork.statusCode, 400, wrongNetwork.body);
    assert.equal(wrongNetwork.json().error.code, 'INVALID_PARAMETERS');
  });

  it('answers 404 TOKEN_NOT_FOUND for a contract whose decimals() does not fit a uint8', async () => {
    // Runtime code answering every call with the one word `value`: decimals() and totalSupply() alike.
    const answering = (value: bigint): Hex => `0x7f${value.toString(16).padStart(64, '0')}60005260206000f3`;
    const client = createTestClient({ mode: 'anvil', transport: http(evm.anvil.rpcUrl) });
    const fits = privateKeyToAccount(generatePrivateKey()).address;
    await client.setCode({ address: fits, bytecode: answering(255n) });
    const token = await get(`/token/info/${fits}`);
    assert.equal(token.statusCode, 200, token.body);
    assert.deepEqual([token.json().decimals, token.json().supply], [255, '255']);

    // 256 was shown as a token, 2^29 failed with 500, 2^20 held the event loop for minutes.
    for (const decimals of [256n, 2n ** 29n, 2n ** 256n - 1n]) {
      const contract = privateKeyToAccount(generatePrivateKey()).address;
      await client.setCode({ address: contract, bytecode: answering(decimals) });
      const res = await get(`/token/info/${contract}`);
      assert.equal(res.statusCode, 404, `${decimals}: ${res.body}`);
      assert.equal(res.json().error.code, 'TOKEN_NOT_FOUND');
    }
  });

  it('shows an owner() answer that is not one ABI-encoded address as no mintAuthority (null)', async () => {
    // Runtime code answering owner() (selector 8da5cb5b) with the bytes `owner`, appended to it, and every
    // other call with the word 6 (decimals() and totalSupply() alike). `len` is owner's length (2 bytes):
    //   00: 60 00 35 60 e0 1c     CALLDATALOAD(0) >> 224                 the selector
    //   06: 63 8d a5 cb 5b 14     PUSH4 owner() EQ
    //   0c: 60 19 57              JUMPI 0x19                             owner() → 0x19
    //   0f: 60 06 60 00 52        MSTORE(0, 6)
    //   14: 60 20 60 00 f3        RETURN(0, 32)                          the word 6
    //   19: 5b                    JUMPDEST
    //   1a: 61 len 61 0029 60 00 39   CODECOPY(0, 0x29, len)             the bytes after the code
    //   23: 61 len 60 00 f3       RETURN(0, len)
    //   29: owner's bytes
    const answeringOwner = (owner: Hex): Hex => {
      const length = ((owner.length - 2) / 2).toString(16).padStart(4, '0');
      return `0x60003560e01c638da5cb5b14601957600660005260206000f35b61${length}61002960003961${length}6000f3${owner.slice(2)}`;
    };
    const client = createTestClient({ mode: 'anvil', transport: http(evm.anvil.rpcUrl) });
    const mintAuthority = async (owner: Hex) => {
      const contract = privateKeyToAccount(generatePrivateKey()).address;
      await client.setCode({ address: contract, bytecode: answeringOwner(owner) });
      const res = await get(`/token/info/${contract}`);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().decimals, 6);
      return res.json().mintAuthority;
    };
    const owner = privateKeyToAccount(generatePrivateKey()).address;
    const hex = owner.slice(2).toLowerCase();
    assert.equal(await mintAuthority(`0x${'00'.repeat(12)}${hex}`), owner);
    // Each was shown as the owner: the decoder took the last 20 bytes of the first word.
    for (const garbage of [
      `0x${'ff'.repeat(12)}${hex}`,
      `0x01${'00'.repeat(11)}${hex}`,
      `0x${'00'.repeat(11)}01${hex}`,
      `0x${'00'.repeat(12)}${hex}${'ab'.repeat(32)}`,
      `0x${'00'.repeat(12)}${hex}00`,
    ] as Hex[]) {
      assert.equal(await mintAuthority(garbage), null, garbage);
    }
    // Too short, or nothing: null as before.
    for (const garbage of [`0x${hex}`, `0x${'00'.repeat(12)}${hex.slice(2)}`, '0x'] as Hex[]) {
      assert.equal(await mintAuthority(garbage), null, garbage);
    }
  });

  it('shows a name or symbol longer than any real token’s as unknown (null)', async () => {
    // Runtime code answering every call with abi.encode(string of `length` NUL bytes): name() and symbol()
    // that long, and decimals() and totalSupply() 32 (the string's offset word).
    const answeringString = (length: number): Hex => {
      const word = (n: number) => n.toString(16).padStart(4, '0');
      return `0x602060005261${word(length)}60205261${word(64 + length)}6000f3`;
    };
    const client = createTestClient({ mode: 'anvil', transport: http(evm.anvil.rpcUrl) });
    const info = async (length: number) => {
      const contract = privateKeyToAccount(generatePrivateKey()).address;
      await client.setCode({ address: contract, bytecode: answeringString(length) });
      const res = await get(`/token/info/${contract}`);
      assert.equal(res.statusCode, 200, res.body.slice(0, 300));
      return res.json();
    };
    const hundred = await info(100);
    assert.deepEqual([hundred.decimals, hundred.name, hundred.symbol], [32, '\u0000'.repeat(100), null]);
    // A contract may answer megabytes; each caller would get them all.
    const long = await info(60_000);
    assert.deepEqual([long.name, long.symbol, long.uri], [null, null, null]);
  });

  it('lists ETH and the USDC held by an address, exactly, and zero and nothing for an empty one', async () => {
    const wallet = await evm.adapter.generateKeypair();
    const empty = await get(`/portfolio/${wallet.address}`);
    assert.equal(empty.statusCode, 200, empty.body);
    assert.deepEqual(empty.json(), {
      publicKey: wallet.address,
      network: 'eip155:31337',
      native: { symbol: 'ETH', decimals: 18, amount: '0', uiAmount: 0 },
      tokens: [],
    });

    assert.equal((await faucet({ address: wallet.address, amount: 1.5 })).statusCode, 200);
    assert.equal((await faucet({ address: wallet.address, amount: 250.75, token: 'USDC' })).statusCode, 200);
    const res = await get(`/portfolio/${wallet.address.toLowerCase()}`);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), {
      publicKey: wallet.address,
      network: 'eip155:31337',
      native: { symbol: 'ETH', decimals: 18, amount: '1500000000000000000', uiAmount: 1.5 },
      tokens: [
        {
          account: evm.usdc.address,
          mint: evm.usdc.address,
          program: 'erc20',
          decimals: 6,
          amount: '250750000',
          uiAmount: 250.75,
          symbol: 'USDC',
        },
      ],
    });

    const malformed = await get('/portfolio/0xnothex0000000000000000000000000000000000');
    assert.equal(malformed.statusCode, 400);
    assert.equal(malformed.json().error.code, 'INVALID_PARAMETERS');
  });
});
