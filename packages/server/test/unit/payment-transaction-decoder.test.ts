import assert from 'node:assert/strict';
import { randomBytes, randomInt } from 'node:crypto';
import { describe, test } from 'node:test';
import {
  type Address,
  getBase58Decoder,
  getCompiledTransactionMessageDecoder,
  getCompiledTransactionMessageEncoder,
  getTransactionDecoder,
  getTransactionEncoder,
} from '@solana/kit';
import { decodePaymentTransaction } from '../../src/chains/solana/payment-transaction-decoder.ts';

const base58 = getBase58Decoder();

/** An address, sometimes with leading zero bytes (each a leading '1' in base58). */
function address(): Address {
  const bytes = randomBytes(32);
  if (randomInt(4) === 0) bytes.fill(0, 0, randomInt(1, 4));
  return base58.decode(bytes) as Address;
}

/** Kit's own encoding of a random legacy or v0 message with `signers` signatures (some all zero). */
function randomTransaction(version: 'legacy' | 0): Uint8Array {
  const accounts = Array.from({ length: randomInt(1, 12) }, address);
  const signers = randomInt(1, Math.min(accounts.length, 3) + 1);
  const instructions = Array.from({ length: randomInt(0, 7) }, () => {
    const accountIndices = Array.from({ length: randomInt(0, 5) }, () => randomInt(accounts.length));
    const data = randomBytes(randomInt(0, 3) === 0 ? 0 : randomInt(1, 200));
    return {
      programAddressIndex: randomInt(accounts.length),
      ...(accountIndices.length > 0 ? { accountIndices } : {}),
      ...(data.length > 0 ? { data: new Uint8Array(data) } : {}),
    };
  });
  const header = {
    numSignerAccounts: signers,
    numReadonlySignerAccounts: randomInt(signers),
    numReadonlyNonSignerAccounts: randomInt(accounts.length - signers + 1),
  };
  const message = {
    version,
    header,
    staticAccounts: accounts,
    lifetimeToken: address(),
    instructions,
    ...(version === 0
      ? {
          addressTableLookups: Array.from({ length: randomInt(0, 3) }, () => ({
            lookupTableAddress: address(),
            writableIndexes: Array.from({ length: randomInt(0, 4) }, () => randomInt(256)),
            readonlyIndexes: Array.from({ length: randomInt(0, 4) }, () => randomInt(256)),
          })),
        }
      : {}),
  };
  const messageBytes = getCompiledTransactionMessageEncoder().encode(message as never);
  const signatures = Object.fromEntries(
    accounts.slice(0, signers).map((a) => [a, randomInt(3) === 0 ? null : new Uint8Array(randomBytes(64))]),
  );
  return new Uint8Array(getTransactionEncoder().encode({ messageBytes, signatures } as never));
}

/** What @solana/kit reads from the bytes (legacy and v0 only), or undefined where it throws. */
function kitDecode(bytes: Uint8Array) {
  try {
    const transaction = getTransactionDecoder().decode(bytes);
    const message = getCompiledTransactionMessageDecoder().decode(transaction.messageBytes);
    if (message.version !== 'legacy' && message.version !== 0) return undefined;
    return { transaction, message };
  } catch {
    return undefined;
  }
}

describe('the payment transaction decoder (facilitator verify, exact on Solana)', () => {
  for (const version of ['legacy', 0] as const) {
    test(`reads ${version} transactions into what @solana/kit's decoders give`, () => {
      for (let i = 0; i < 200; i++) {
        const bytes = randomTransaction(version);
        const expected = kitDecode(bytes);
        assert.ok(expected !== undefined);
        assert.deepStrictEqual(decodePaymentTransaction(bytes), expected);
      }
    });

    test(`${version}: truncated or corrupted, it accepts nothing kit refuses, and reads what both accept alike`, () => {
      for (let i = 0; i < 4; i++) {
        const bytes = randomTransaction(version);
        const variants: Uint8Array[] = [];
        for (let length = 0; length < bytes.length; length++) variants.push(bytes.subarray(0, length));
        for (let j = 0; j < 100; j++) {
          const changed = new Uint8Array(bytes);
          changed[randomInt(Math.min(changed.length, 120))] = randomInt(256);
          variants.push(changed);
        }
        for (const variant of variants) {
          const ours = decodePaymentTransaction(variant);
          const kits = kitDecode(variant);
          if (ours !== undefined) {
            assert.deepStrictEqual(ours, kits);
            continue;
          }
          // Kit reads a count missing at the very end of the bytes as an empty list (no instructions,
          // no lookup tables); the chain does not, and neither does this decoder. Anything else kit
          // reads, it must read too: the message kit found then encodes to more bytes than there were.
          if (kits !== undefined) {
            const encoded = getCompiledTransactionMessageEncoder().encode(kits.message as never);
            assert.ok(encoded.length > kits.transaction.messageBytes.length, `${variant.length} bytes`);
          }
        }
      }
    });
  }

  test('a v1 (message-first) transaction or a later version is not a payment it reads', () => {
    assert.equal(decodePaymentTransaction(Uint8Array.from([0x81, 1, 0, 0])), undefined);
    const bytes = randomTransaction(0);
    const versionAt = 1 + (bytes[0] ?? 0) * 64;
    const later = new Uint8Array(bytes);
    later[versionAt] = 0x81;
    assert.equal(decodePaymentTransaction(later), undefined);
  });
});
