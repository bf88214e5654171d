import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type Address,
  address,
  appendTransactionMessageInstructions,
  createSolanaRpc,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  getSignatureFromTransaction,
  type Instruction,
  type KeyPairSigner,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from '@solana/kit';
import {
  findAssociatedTokenPda,
  getBurnCheckedInstruction,
  getCloseAccountInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from '@solana-program/token';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { callAs } from '../../support/api-caller.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';

/**
 * Review of #28 (spend policies x token sends): a policy that lists only USDC allows no SOL at all, yet
 * every USDC send to a fresh recipient opens the recipient's token account with the sender's SOL (its
 * rent-exempt deposit, about 0.002 SOL), and the recipient, who owns that account, closes it and takes the
 * deposit. So a key held to "USDC only, 1 USDC a day" moves about 2 SOL a day to addresses it chooses
 * (1,000 sends of the 0.001 USDC minimum), none of it counted against any cap.
 */
describe('review #28: SOL leaves through token-account rent under a USDC-only policy', {
  timeout: 120_000,
}, () => {
  let chain: TestChain;
  let gw: TestGateway;
  let buyer: { key: string; accountId: string; wallet: string };
  let rpc: ReturnType<typeof createSolanaRpc>;

  before(async () => {
    chain = await startTestChain();
    rpc = createSolanaRpc(chain.localnet.rpcUrl);
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter]) });
    const caller = await gw.newCaller('standard');
    const wallet = (await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'solana' })).body
      .address as string;
    buyer = { ...caller, wallet };
    assert.equal(
      (await callAs(gw, buyer.key, 'POST', '/faucet', { address: wallet, amount: 1 })).status,
      200,
    );
    const usdc = await callAs(gw, buyer.key, 'POST', '/faucet', {
      address: wallet,
      amount: 10,
      token: 'USDC',
    });
    assert.equal(usdc.status, 200, JSON.stringify(usdc.body));
    const at = Date.now();
    await gw.store.spending.putPolicy({
      accountId: buyer.accountId,
      keyId: null,
      limits: [
        {
          network: chain.adapter.info.id,
          asset: chain.localnet.usdcMint.address,
          symbol: 'USDC',
          decimals: 6,
          maxPerPayment: null,
          maxPerDay: 1_000_000n,
        },
      ],
      allowedRecipients: null,
      allowedHosts: null,
      allowedNetworks: null,
      expiresAt: null,
      createdAt: at,
      updatedAt: at,
    });
  });
  after(async () => {
    await gw?.close();
    await chain?.close();
  });

  /** Sends `instructions` with `payer` paying the fee, and waits until the chain confirms them. */
  const submit = async (payer: KeyPairSigner, instructions: Instruction[]) => {
    const { value: blockhash } = await rpc.getLatestBlockhash().send();
    const signed = await signTransactionMessageWithSigners(
      pipe(
        createTransactionMessage({ version: 0 }),
        (m) => setTransactionMessageFeePayerSigner(payer, m),
        (m) => setTransactionMessageLifetimeUsingBlockhash(blockhash, m),
        (m) => appendTransactionMessageInstructions(instructions, m),
      ),
    );
    await rpc.sendTransaction(getBase64EncodedWireTransaction(signed), { encoding: 'base64' }).send();
    const signature = getSignatureFromTransaction(signed);
    for (let i = 0; i < 200; i++) {
      const { value } = await rpc.getSignatureStatuses([signature]).send();
      const status = value[0];
      if (status?.err) throw new Error(`transaction failed: ${JSON.stringify(status.err)}`);
      if (status?.confirmationStatus === 'confirmed' || status?.confirmationStatus === 'finalized') return;
      await sleep(50);
    }
    throw new Error('not confirmed');
  };

  it('the policy refuses SOL itself', async () => {
    const res = await callAs(gw, buyer.key, 'POST', '/payment/send', {
      walletAddress: buyer.wallet,
      recipientAddress: (await generateKeyPairSigner()).address,
      amount: 0.01,
    });
    assert.equal(res.status, 403, JSON.stringify(res.body));
    assert.equal(res.body.error.code, 'SPEND_NOT_ALLOWED');
  });

  it('nor do USDC sends to fresh recipients hand them SOL they can take (the deposit of their token account)', async () => {
    const collector = await generateKeyPairSigner();
    await chain.adapter.faucet?.fundNative(collector.address, 10_000_000n);
    const mint = address(chain.localnet.usdcMint.address);
    const start = (await rpc.getBalance(collector.address, { commitment: 'confirmed' }).send()).value;
    let sends = 0;
    for (let i = 0; i < 3; i++) {
      const owner = await generateKeyPairSigner();
      const res = await callAs(gw, buyer.key, 'POST', '/payment/send', {
        walletAddress: buyer.wallet,
        recipientAddress: owner.address,
        amount: 0.001,
        asset: 'USDC',
      });
      if (res.status !== 200) continue;
      assert.equal(res.body.status, 'confirmed', JSON.stringify(res.body));
      sends += 1;
      const [account] = await findAssociatedTokenPda({
        owner: owner.address,
        mint,
        tokenProgram: TOKEN_PROGRAM_ADDRESS,
      });
      // The recipient empties its new account and closes it, the deposit going to the collector.
      await submit(collector, [
        getBurnCheckedInstruction({ account, mint, authority: owner, amount: 1_000n, decimals: 6 }),
        getCloseAccountInstruction({ account, destination: collector.address as Address, owner }),
      ]);
    }
    const end = (await rpc.getBalance(collector.address, { commitment: 'confirmed' }).send()).value;
    assert.ok(
      end <= start,
      `${sends} USDC sends under a policy allowing no SOL gave the collector ${end - start} lamports`,
    );
  });

  it('a native daily cap bounds what the wallet pays, priority fees included', async () => {
    const caller = await gw.newCaller('standard');
    const wallet = (await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'solana' })).body
      .address as string;
    assert.equal(
      (await callAs(gw, caller.key, 'POST', '/faucet', { address: wallet, amount: 1 })).status,
      200,
    );
    const at = Date.now();
    // 0.002 SOL a day.
    await gw.store.spending.putPolicy({
      accountId: caller.accountId,
      keyId: null,
      limits: [
        {
          network: chain.adapter.info.id,
          asset: null,
          symbol: 'SOL',
          decimals: 9,
          maxPerPayment: null,
          maxPerDay: 2_000_000n,
        },
      ],
      allowedRecipients: null,
      allowedHosts: null,
      allowedNetworks: null,
      expiresAt: null,
      createdAt: at,
      updatedAt: at,
    });
    const start = await chain.adapter.getBalance(wallet);
    for (let i = 0; i < 2; i++) {
      const res = await callAs(gw, caller.key, 'POST', '/payment/send', {
        walletAddress: wallet,
        recipientAddress: (await generateKeyPairSigner()).address,
        amount: 0.001,
        priorityFee: 0.01,
      });
      assert.ok(res.status === 200 || res.status === 403, JSON.stringify(res.body));
    }
    const end = await chain.adapter.getBalance(wallet);
    assert.ok(
      start - end <= 2_000_000n,
      `the wallet paid ${start - end} lamports in a day capped at 2000000`,
    );
  });
});
