// getSignaturesForAddress applies the commitment before `limit` (issue 32 item 3: wallets with 76–78
// landed sends were answered 54–56 signatures — at the default commitment, finalized, the newest
// unfinalized sends took places of the limit and were then filtered out).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateKeyPairSigner } from '@solana/kit';
import {
  fundedSigner,
  LAMPORTS_PER_SOL,
  signedTransfer,
  startHarness,
  wireBase64,
} from './support/fixture.ts';

test('limit counts only signatures at the requested commitment; paging with before reaches every one', async () => {
  const h = await startHarness({ finalizedDepth: 3 });
  try {
    const payer = await fundedSigner(h.localnet, 5n);
    const recipient = await generateKeyPairSigner();
    const signatures: string[] = [];
    // One transfer per slot, slots s..s+5; the open slot is then s+6, finalized s+3: the newest
    // two transfers are confirmed only.
    for (let i = 0; i < 6; i++) {
      const tx = await signedTransfer(h, payer, recipient.address, LAMPORTS_PER_SOL / 10n + BigInt(i));
      signatures.push(await h.rpc.sendTransaction(wireBase64(tx), { encoding: 'base64' }).send());
      h.localnet.advanceSlots(1);
    }
    const page = async (commitment: 'confirmed' | 'finalized', limit: number, before?: string) =>
      (
        await h.rpc
          .getSignaturesForAddress(recipient.address, {
            commitment,
            limit,
            ...(before === undefined ? {} : { before: before as never }),
          })
          .send()
      ).map((info) => info.signature as string);
    const newestFirst = [...signatures].reverse();
    assert.deepEqual(await page('confirmed', 1000), newestFirst);
    assert.deepEqual(await page('finalized', 2), [signatures[3], signatures[2]]);
    assert.deepEqual(await page('finalized', 3, signatures[2]), [signatures[1], signatures[0]]);
    const paged: string[] = [];
    for (let before: string | undefined; ; ) {
      const next = await page('confirmed', 2, before);
      paged.push(...next);
      if (next.length < 2) break;
      before = next[next.length - 1];
    }
    assert.deepEqual(paged, newestFirst);
  } finally {
    await h.close();
  }
});
