import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { PaymentProofs } from '../../../src/services/payments/proofs/payment-proof.ts';

const CLAIMS = {
  pid: 'pay_01JD0Q3ZK8M4F6X3V5N7R9T2AB',
  net: 'solana:localnet',
  sig: '5'.repeat(88),
  from: 'BuyerWallet1111111111111111111111111111111',
  to: 'SellerWallet111111111111111111111111111111',
  amt: '1000000',
  iat: 1_795_000_000_000,
};

/** The order of the Ed25519 group: S and S + L are the same scalar. */
const L = 2n ** 252n + 27742317777372353535851937790883648493n;

function parts(proof: string) {
  const bytes = Buffer.from(proof.slice(2), 'hex');
  return { body: bytes.subarray(0, bytes.length - 64), signature: Buffer.from(bytes.subarray(-64)) };
}

function assemble(body: Buffer, signature: Buffer): string {
  return `0x${Buffer.concat([body, signature]).toString('hex')}`;
}

describe('gate402 payment proofs: issue and check', () => {
  const ours = new PaymentProofs(randomBytes(32));

  it('accepts a proof it issued, with its claims', async () => {
    const check = await ours.check(ours.issue(CLAIMS));
    assert.equal(check.valid, true);
    assert.equal(check.valid && check.claims.pid, CLAIMS.pid);
  });

  it('accepts a proof issued by another instance sharing its master key', async () => {
    const masterKey = randomBytes(32);
    const proof = new PaymentProofs(masterKey).issue(CLAIMS);
    assert.equal((await new PaymentProofs(masterKey).check(proof)).valid, true);
  });

  it('refuses a changed signature, a changed claim, and the same signature in its other encoding', async () => {
    const { body, signature } = parts(ours.issue(CLAIMS));
    const flipped = Buffer.from(signature);
    flipped[10] = (flipped[10] ?? 0) ^ 1;
    const otherAmount = ours.issue({ ...CLAIMS, amt: '9000000' });
    // S lives in the second half, little-endian; S + L verifies in lax implementations and must not here.
    let s = 0n;
    for (let i = 63; i >= 32; i--) s = (s << 8n) | BigInt(signature[i] ?? 0);
    const malleated = Buffer.from(signature);
    let sPlusL = s + L;
    for (let i = 32; i < 64; i++) {
      malleated[i] = Number(sPlusL & 0xffn);
      sPlusL >>= 8n;
    }
    for (const forged of [
      assemble(body, flipped),
      assemble(parts(otherAmount).body, signature),
      assemble(body, malleated),
    ]) {
      assert.deepEqual(await ours.check(forged), { valid: false, reason: 'bad_signature' });
    }
  });

  it("checks a trusted gateway's proof with its published key, and refuses one changed in transit", async () => {
    const theirs = new PaymentProofs(randomBytes(32));
    const trusting = new PaymentProofs(randomBytes(32), theirs.publishedKeys());
    const proof = theirs.issue(CLAIMS);
    assert.equal((await trusting.check(proof)).valid, true);
    const { body, signature } = parts(proof);
    signature[0] = (signature[0] ?? 0) ^ 1;
    assert.deepEqual(await trusting.check(assemble(body, signature)), {
      valid: false,
      reason: 'bad_signature',
    });
    assert.deepEqual(await ours.check(proof), { valid: false, reason: 'unknown_issuer' });
  });

  it('refuses what is not a proof', async () => {
    for (const junk of ['', '0x', 'hello', `0x${'00'.repeat(80)}`, `0x${'zz'.repeat(80)}`]) {
      assert.deepEqual(await ours.check(junk), { valid: false, reason: 'malformed' });
    }
  });
});
