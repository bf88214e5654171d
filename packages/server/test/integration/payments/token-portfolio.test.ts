import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { address, createSolanaRpc, generateKeyPairSigner } from '@solana/kit';
import { decodeMetaplexMetadata } from '../../../src/chains/solana/metaplex-metadata.ts';
import { type PaymentFixture, startPaymentFixture } from '../../support/payment-fixture.ts';
import {
  createToken2022WithMetadata,
  mintToken2022,
  openClosedMintAccount,
  TOKEN_2022,
} from '../../support/token-2022-mint.ts';

describe('GET /token/info and GET /portfolio on Solana', () => {
  let f: PaymentFixture;
  let key: string;
  let token2022: { mint: string; authority: string };
  let holder: string;

  before(async () => {
    f = await startPaymentFixture({ chain: { slotMs: 0, finalizedDepth: 2 } });
    key = (await f.gw.newCaller()).key;
    const payer = await generateKeyPairSigner();
    f.chain.localnet.airdrop(payer.address, 10_000_000_000n);
    f.chain.localnet.advanceSlots(1);
    const created = await createToken2022WithMetadata(
      f.chain.localnet.rpcUrl,
      payer,
      { name: 'Gate Token', symbol: 'GATE', uri: 'https://example.com/gate.json', decimals: 2 },
      () => f.chain.localnet.advanceSlots(1),
    );
    token2022 = { mint: created.mint, authority: created.authority.address };
    holder = (await generateKeyPairSigner()).address;
    await mintToken2022(f.chain.localnet.rpcUrl, created.authority, created.mint, address(holder), 725n);
    f.chain.localnet.advanceSlots(1);
  });
  after(() => f.close());

  it('describes the USDC-like SPL mint exactly', async () => {
    const usdc = f.chain.localnet.usdcMint.address;
    await f.chain.localnet.mintUsdc(holder, 5_000_000n);
    f.chain.localnet.advanceSlots(1);
    const res = await f.get(key, `/token/info/${usdc}`);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), {
      address: usdc,
      network: f.chain.localnet.network,
      program: 'spl-token',
      decimals: 6,
      supply: '5000000',
      uiSupply: 5,
      mintAuthority: f.chain.localnet.mintAuthority.address,
      freezeAuthority: null,
      name: null,
      symbol: null,
      uri: null,
    });
  });

  it('reads name, symbol and uri from a Token-2022 mint’s metadata extension', async () => {
    const res = await f.get(key, `/token/info/${token2022.mint}`);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), {
      address: token2022.mint,
      network: f.chain.localnet.network,
      program: 'spl-token-2022',
      decimals: 2,
      supply: '725',
      uiSupply: 7.25,
      mintAuthority: token2022.authority,
      freezeAuthority: null,
      name: 'Gate Token',
      symbol: 'GATE',
      uri: 'https://example.com/gate.json',
    });
  });

  it('answers 404 TOKEN_NOT_FOUND for an address that is not a mint, 400 for a malformed one', async () => {
    for (const notAMint of [holder, (await generateKeyPairSigner()).address]) {
      const res = await f.get(key, `/token/info/${notAMint}`);
      assert.equal(res.statusCode, 404, notAMint);
      assert.equal(res.json().error.code, 'TOKEN_NOT_FOUND');
      assert.deepEqual(res.json().error.details, { mint_address: 'is not a token mint' });
    }
    const bad = await f.get(key, '/token/info/not-an-address');
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().error.code, 'INVALID_PARAMETERS');
    assert.deepEqual(bad.json().error.details, {
      mint_address: 'must be a Solana (base58) or EVM (0x…) address',
    });
  });

  it('lists SOL and the tokens of both token programs', async () => {
    f.chain.localnet.airdrop(holder, 1_500_000_000n);
    f.chain.localnet.advanceSlots(1);
    const res = await f.get(key, `/portfolio/${holder}`);
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.deepEqual(body.native, { symbol: 'SOL', decimals: 9, amount: '1500000000', uiAmount: 1.5 });
    assert.equal(body.publicKey, holder);
    assert.equal(body.network, f.chain.localnet.network);
    const usdc = f.chain.localnet.usdcMint.address;
    const expected = [
      { mint: usdc, program: 'spl-token', decimals: 6, amount: '5000000', uiAmount: 5, symbol: 'USDC' },
      {
        mint: token2022.mint,
        program: 'spl-token-2022',
        decimals: 2,
        amount: '725',
        uiAmount: 7.25,
        symbol: null,
      },
    ].sort((a, b) => (a.mint < b.mint ? -1 : 1));
    assert.deepEqual(
      body.tokens.map(({ account: _account, ...rest }: { account: string }) => rest),
      expected,
    );
    for (const token of body.tokens) assert.match(token.account, /^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
  });

  it('leaves out a token account whose mint was closed, which the node answers unparsed', async () => {
    const owner = (await generateKeyPairSigner()).address;
    const payer = await generateKeyPairSigner();
    f.chain.localnet.airdrop(payer.address, 1_000_000_000n);
    f.chain.localnet.advanceSlots(1);
    const closed = await openClosedMintAccount(f.chain.localnet.rpcUrl, payer, address(owner), () =>
      f.chain.localnet.advanceSlots(1),
    );
    await f.chain.localnet.mintUsdc(owner, 1_000_000n);
    f.chain.localnet.advanceSlots(1);
    // As Agave: no mint, no decimals, so jsonParsed falls back to base64 for that account.
    const { value } = await createSolanaRpc(f.chain.localnet.rpcUrl)
      .getTokenAccountsByOwner(address(owner), { programId: TOKEN_2022 }, { encoding: 'jsonParsed' })
      .send();
    assert.deepEqual(
      value.map((a) => [a.pubkey, Array.isArray(a.account.data) ? a.account.data[1] : 'parsed']),
      [[closed.account, 'base64']],
    );

    // Anyone may open such an account for any owner: it failed the owner's portfolio with 500.
    const res = await f.get(key, `/portfolio/${owner}`);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(
      res.json().tokens.map((t: { mint: string; amount: string }) => [t.mint, t.amount]),
      [[f.chain.localnet.usdcMint.address, '1000000']],
    );
  });

  it('answers an empty wallet with zero and no tokens, and refuses a malformed address', async () => {
    const empty = (await generateKeyPairSigner()).address;
    const res = await f.get(key, `/portfolio/${empty}`);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), {
      publicKey: empty,
      network: f.chain.localnet.network,
      native: { symbol: 'SOL', decimals: 9, amount: '0', uiAmount: 0 },
      tokens: [],
    });
    const bad = await f.get(key, '/portfolio/0xnope');
    assert.equal(bad.statusCode, 400);
    assert.deepEqual(bad.json().error.details, {
      public_key: 'must be a Solana (base58) or EVM (0x…) address',
    });
  });
});

describe('Metaplex metadata accounts', () => {
  it('decodes name, symbol and uri and trims Metaplex’s NUL padding', () => {
    const str = (text: string, size: number) => {
      const bytes = Buffer.alloc(size);
      bytes.write(text, 'utf8');
      const length = Buffer.alloc(4);
      length.writeUInt32LE(size);
      return Buffer.concat([length, bytes]);
    };
    const data = Buffer.concat([
      Buffer.of(4),
      Buffer.alloc(32, 1),
      Buffer.alloc(32, 2),
      str('USD Coin', 32),
      str('USDC', 10),
      str('https://example.com/usdc.json', 200),
      Buffer.alloc(20),
    ]);
    assert.deepEqual(decodeMetaplexMetadata(new Uint8Array(data)), {
      name: 'USD Coin',
      symbol: 'USDC',
      uri: 'https://example.com/usdc.json',
    });
    assert.equal(
      decodeMetaplexMetadata(new Uint8Array(Buffer.concat([Buffer.of(1), data.subarray(1)]))),
      undefined,
    );
    assert.equal(decodeMetaplexMetadata(new Uint8Array(data.subarray(0, 80))), undefined);
  });
});
