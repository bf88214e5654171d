// @solana/web3.js v1 `Connection` against the localnet: the calls older integrations make.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  Connection,
  Keypair,
  LAMPORTS_PER_SOL,
  type ParsedInstruction,
  PublicKey,
  SystemProgram,
  Transaction,
} from '@solana/web3.js';
import { type Localnet, startLocalnet } from '../src/index.ts';

let localnet: Localnet;
let connection: Connection;
before(async () => {
  localnet = await startLocalnet({ port: 0, slotMs: 25, finalizedDepth: 3 });
  connection = new Connection(localnet.rpcUrl, { commitment: 'confirmed', wsEndpoint: localnet.wsUrl });
});
after(() => localnet.close());

test('requestAirdrop, sendTransaction, confirmTransaction and getParsedTransaction', async () => {
  const payer = Keypair.generate();
  const recipient = Keypair.generate();
  const airdrop = await connection.requestAirdrop(payer.publicKey, 2 * LAMPORTS_PER_SOL);
  const latest = await connection.getLatestBlockhash();
  const confirmedAirdrop = await connection.confirmTransaction({ signature: airdrop, ...latest });
  assert.equal(confirmedAirdrop.value.err, null);
  assert.equal(await connection.getBalance(payer.publicKey), 2 * LAMPORTS_PER_SOL);

  const tx = new Transaction().add(
    SystemProgram.transfer({
      fromPubkey: payer.publicKey,
      toPubkey: recipient.publicKey,
      lamports: LAMPORTS_PER_SOL,
    }),
  );
  const signature = await connection.sendTransaction(tx, [payer]);
  const blockhash = {
    blockhash: tx.recentBlockhash ?? '',
    lastValidBlockHeight: tx.lastValidBlockHeight ?? 0,
  };
  const confirmed = await connection.confirmTransaction({ signature, ...blockhash }, 'confirmed');
  assert.equal(confirmed.value.err, null);

  const parsed = await connection.getParsedTransaction(signature, {
    commitment: 'confirmed',
    maxSupportedTransactionVersion: 0,
  });
  assert.ok(parsed);
  assert.equal(parsed.meta?.fee, 5000);
  assert.deepEqual(parsed.meta?.preBalances, [2 * LAMPORTS_PER_SOL, 0, 1]);
  assert.deepEqual(parsed.meta?.postBalances, [LAMPORTS_PER_SOL - 5000, LAMPORTS_PER_SOL, 1]);
  assert.equal(parsed.version, 'legacy');
  const instruction = parsed.transaction.message.instructions[0] as ParsedInstruction;
  assert.equal(instruction.program, 'system');
  assert.deepEqual(instruction.parsed, {
    type: 'transfer',
    info: {
      source: payer.publicKey.toBase58(),
      destination: recipient.publicKey.toBase58(),
      lamports: LAMPORTS_PER_SOL,
    },
  });
  assert.deepEqual(
    parsed.transaction.message.accountKeys.map((k) => [k.pubkey.toBase58(), k.signer, k.writable]),
    [
      [payer.publicKey.toBase58(), true, true],
      [recipient.publicKey.toBase58(), false, true],
      [SystemProgram.programId.toBase58(), false, false],
    ],
  );

  const signatures = await connection.getSignaturesForAddress(recipient.publicKey);
  assert.deepEqual(
    signatures.map((s) => s.signature),
    [signature],
  );
  const info = await connection.getAccountInfo(recipient.publicKey);
  assert.equal(info?.lamports, LAMPORTS_PER_SOL);
  assert.ok(info?.owner.equals(SystemProgram.programId));
});

test('token queries through web3.js: parsed token accounts of the USDC-like mint', async () => {
  const owner = Keypair.generate();
  const { tokenAccount } = await localnet.mintUsdc(owner.publicKey.toBase58(), 1_234_567n);
  localnet.advanceSlots(1);
  const accounts = await connection.getParsedTokenAccountsByOwner(owner.publicKey, {
    mint: new PublicKey(localnet.usdcMint.address),
  });
  assert.equal(accounts.value.length, 1);
  assert.equal(accounts.value[0]?.pubkey.toBase58(), tokenAccount);
  assert.deepEqual(accounts.value[0]?.account.data.parsed.info.tokenAmount, {
    amount: '1234567',
    decimals: 6,
    uiAmount: 1.234567,
    uiAmountString: '1.234567',
  });
  const supply = await connection.getTokenSupply(new PublicKey(localnet.usdcMint.address));
  assert.equal(supply.value.decimals, 6);
});
