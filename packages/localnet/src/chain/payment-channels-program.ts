// The x402 payment-channels program (the escrow of the stock @x402/svm `upto` scheme) at its canonical
// id. No package ships that program's binary, so the localnet serves gate402's own implementation
// (programs/payment-channels/payment_channels.c, built with stock clang by
// tools/sbpf/build-payment-channels.ts), loaded on every start: a new ledger and an existing one get the
// current build, as the program is not part of the ledger's accounts.
import type { LiteSvm } from 'litesvm/dist/internal.js';
import { decodeBase58 } from '../wire/base58.ts';
import { paymentChannelsElf } from './payment-channels-elf.ts';

export const PAYMENT_CHANNELS_PROGRAM = 'CHNLxYvVA28MJP9PrFuDXccuoGXAx7jBacfLEkahyGsX';

export function servePaymentChannelsProgram(svm: LiteSvm): void {
  svm.addProgram(decodeBase58(PAYMENT_CHANNELS_PROGRAM) as Uint8Array, paymentChannelsElf());
}
