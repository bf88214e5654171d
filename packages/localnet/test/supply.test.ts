// getSupply and getLargestAccounts count every account, as Agave's bank capitalization does: LiteSVM's
// own programs, program data and sysvars as well as the accounts transactions and the operator made.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Address, generateKeyPairSigner } from '@solana/kit';
import {
  fundedSigner,
  type Harness,
  LAMPORTS_PER_SOL,
  signedTransfer,
  startHarness,
  wireBase64,
} from './support/fixture.ts';

/** Every owner of an account on a new localnet: loaders, the sysvar id, System and the token programs. */
const OWNERS = [
  'NativeLoader1111111111111111111111111111111',
  'BPFLoader1111111111111111111111111111111111',
  'BPFLoader2111111111111111111111111111111111',
  'BPFLoaderUpgradeab1e11111111111111111111111',
  'LoaderV411111111111111111111111111111111111',
  'Sysvar1111111111111111111111111111111111111',
  '11111111111111111111111111111111',
  'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
  'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb',
] as Address[];

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

async function everyAccount(): Promise<Map<string, bigint>> {
  const out = new Map<string, bigint>();
  for (const owner of OWNERS) {
    const accounts = await h.rpc
      .getProgramAccounts(owner, { commitment: 'confirmed', encoding: 'base64' })
      .send();
    for (const { pubkey, account } of accounts) out.set(pubkey, account.lamports);
  }
  return out;
}

test('getSupply: the total is the lamports of every account, built-in programs and sysvars included', async () => {
  const payer = await fundedSigner(h.localnet, 2n);
  const recipient = (await generateKeyPairSigner()).address;
  const tx = await signedTransfer(h, payer, recipient, LAMPORTS_PER_SOL);
  await h.rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send();
  h.localnet.advanceSlots(1);

  const accounts = await everyAccount();
  // LiteSVM's own accounts are among them: the Token program, Token-2022's program data, the Clock.
  for (const builtin of [
    'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
    'SysvarC1ock11111111111111111111111111111111',
    '11111111111111111111111111111111',
  ])
    assert.ok(accounts.has(builtin), builtin);
  const sum = [...accounts.values()].reduce((a, b) => a + b, 0n);
  const supply = await h.rpc.getSupply({ commitment: 'confirmed' }).send();
  assert.equal(supply.value.total, sum);
  assert.equal(supply.value.circulating, sum);
  assert.equal(supply.value.nonCirculating, 0n);
  assert.deepEqual(supply.value.nonCirculatingAccounts, []);
  const excluded = await h.rpc
    .getSupply({ commitment: 'confirmed', excludeNonCirculatingAccountsList: true })
    .send();
  assert.equal(excluded.value.total, sum);

  // The largest holders, from the same set: the 20 largest, most first.
  const largest = (await h.rpc.getLargestAccounts({ commitment: 'confirmed' }).send()).value;
  const expected = [...accounts.entries()]
    .sort(([a, x], [b, y]) => (x === y ? (a < b ? -1 : 1) : x > y ? -1 : 1))
    .slice(0, 20)
    .map(([address, lamports]) => ({ address, lamports }));
  assert.deepEqual(largest, expected);
  // No ghost holder: System owns the faucet, the mint authority, the payer and the recipient, and not
  // LiteSVM's own (unused) airdrop account.
  const system = await h.rpc
    .getProgramAccounts('11111111111111111111111111111111' as Address, {
      commitment: 'confirmed',
      encoding: 'base64',
    })
    .send();
  assert.deepEqual(
    system.map((a) => a.pubkey).sort(),
    [largest[0]?.address, h.localnet.mintAuthority.address, payer.address, recipient].sort(),
  );
});
