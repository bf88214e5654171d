// gate402's payment-channels program: the ELF the localnet loads is the committed build of the
// committed source. CI has no clang: there the rebuild is skipped (and says so); the committed .so and
// the embedded module are always compared.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  PAYMENT_CHANNELS_CLANG,
  PAYMENT_CHANNELS_ELF_SHA256,
  paymentChannelsElf,
} from '../src/chain/payment-channels-elf.ts';
import { PAYMENT_CHANNELS_PROGRAM, startLocalnet } from '../src/index.ts';
import { buildPaymentChannels, clangVersion, sha256Hex } from '../tools/sbpf/build-payment-channels.ts';
import { rawCall, tempDir } from './support/fixture.ts';

const SO_FILE = fileURLToPath(new URL('../programs/payment-channels/payment_channels.so', import.meta.url));

describe('payment-channels program', () => {
  it('is served at its canonical id on a new ledger and again when an existing ledger is opened', async () => {
    const dir = tempDir();
    try {
      for (let start = 0; start < 2; start++) {
        const localnet = await startLocalnet({ port: 0, slotMs: 0, ledgerDir: dir.path });
        try {
          const answer = await rawCall(localnet.rpcUrl, 'getAccountInfo', [
            PAYMENT_CHANNELS_PROGRAM,
            { encoding: 'base64' },
          ]);
          const value = (answer.result as { value: { executable: boolean } | null }).value;
          assert.equal(value?.executable, true, `start ${start}: ${JSON.stringify(answer)}`);
        } finally {
          await localnet.close();
        }
      }
    } finally {
      dir.remove();
    }
  });

  it('the embedded ELF is the committed payment_channels.so', () => {
    const embedded = paymentChannelsElf();
    assert.equal(sha256Hex(embedded), PAYMENT_CHANNELS_ELF_SHA256);
    assert.deepEqual(embedded, new Uint8Array(readFileSync(SO_FILE)));
  });

  const version = clangVersion();
  const skip =
    version === undefined
      ? 'clang is not installed: the committed ELF is not rebuilt here'
      : version !== PAYMENT_CHANNELS_CLANG
        ? `clang is ${version}, the ELF was built with ${PAYMENT_CHANNELS_CLANG}: outputs may differ`
        : false;
  it('rebuilding payment_channels.c with clang gives the committed ELF byte for byte', { skip }, () => {
    const rebuilt = buildPaymentChannels();
    assert.equal(
      sha256Hex(rebuilt),
      PAYMENT_CHANNELS_ELF_SHA256,
      'payment_channels.c changed without a rebuild: run npx tsx packages/localnet/tools/sbpf/build-payment-channels.ts',
    );
  });
});
