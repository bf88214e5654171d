import { canonicalAddress } from '../chains/canonical-address.ts';
import { addressFamily } from '../domain/address.ts';
import { GatewayError, invalidParameters } from '../domain/gateway-error.ts';

/**
 * Solana's System Program: the program a SOL transfer invokes. Its address is a valid 32-byte key
 * that nobody holds, so it can neither sign a transfer nor be paid by one (a transaction cannot
 * invoke an account it also writes); without this check the transaction fails to compile (500) or
 * fails on chain after its fee was paid.
 */
const SOLANA_SYSTEM_PROGRAM = '11111111111111111111111111111111';

/** The payer of a send (spec §4.1, §4.5): an address that can sign a transfer on its chain. */
export function checkPayer(family: string, walletAddress: string): void {
  if (family === 'solana' && walletAddress === SOLANA_SYSTEM_PROGRAM) {
    throw invalidParameters({ walletAddress: 'is the System Program, which cannot sign a transfer' });
  }
}

/** The rules of the recipient (spec §7 INVALID_RECIPIENT): same family, not the payer, not a program. */
export function checkRecipient(family: string, walletAddress: string, recipientAddress: string): void {
  if (addressFamily(recipientAddress) !== family) {
    throw new GatewayError('INVALID_RECIPIENT', {
      message: `The recipient is not a valid ${family} address.`,
      details: { recipientAddress: `must be a ${family} address` },
    });
  }
  if (canonicalAddress(recipientAddress) === canonicalAddress(walletAddress)) {
    throw new GatewayError('INVALID_RECIPIENT', {
      message: 'A wallet cannot pay itself.',
      details: { recipientAddress: 'must differ from walletAddress' },
    });
  }
  if (family === 'solana' && recipientAddress === SOLANA_SYSTEM_PROGRAM) {
    throw new GatewayError('INVALID_RECIPIENT', {
      message: 'The System Program cannot receive a transfer.',
      details: { recipientAddress: 'is the System Program' },
    });
  }
}
