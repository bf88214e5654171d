import { canonicalAddress } from '../chains/canonical-address.ts';
import { addressFamily } from '../domain/address.ts';
import { GatewayError, invalidParameters } from '../domain/gateway-error.ts';

/**
 * The Solana programs a SOL transfer invokes: the System Program (the transfer), the Compute Budget
 * Program (its fee) and the Memo Program (the payment id it carries). Each address is a valid 32-byte
 * key that nobody holds, so it can neither sign a transfer nor be paid by one (a transaction cannot
 * invoke an account it also writes); without this check the transaction fails to compile (500) or
 * fails on chain after its fee was paid.
 */
const SOLANA_TRANSFER_PROGRAMS: Readonly<Record<string, string>> = {
  '11111111111111111111111111111111': 'System Program',
  ComputeBudget111111111111111111111111111111: 'Compute Budget Program',
  MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr: 'Memo Program',
};

/** The name of the program a transfer invokes that `address` is, on Solana; undefined for any other. */
function transferProgram(family: string, address: string): string | undefined {
  return family === 'solana' && Object.hasOwn(SOLANA_TRANSFER_PROGRAMS, address)
    ? SOLANA_TRANSFER_PROGRAMS[address]
    : undefined;
}

/** The payer of a send (spec §4.1, §4.5): an address that can sign a transfer on its chain. */
export function checkPayer(family: string, walletAddress: string): void {
  const program = transferProgram(family, walletAddress);
  if (program !== undefined) {
    throw invalidParameters({ walletAddress: `is the ${program}, which cannot sign a transfer` });
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
  if (family === 'evm' && hasWrongChecksum(recipientAddress)) {
    throw new GatewayError('INVALID_RECIPIENT', {
      message: 'The recipient address does not match its checksum: it may be mistyped.',
      details: { recipientAddress: 'mixes upper and lower case, but not as its EIP-55 checksum does' },
    });
  }
  if (canonicalAddress(recipientAddress) === canonicalAddress(walletAddress)) {
    throw new GatewayError('INVALID_RECIPIENT', {
      message: 'A wallet cannot pay itself.',
      details: { recipientAddress: 'must differ from walletAddress' },
    });
  }
  const program = transferProgram(family, recipientAddress);
  if (program !== undefined) {
    throw new GatewayError('INVALID_RECIPIENT', {
      message: `The ${program} cannot receive a transfer.`,
      details: { recipientAddress: `is the ${program}` },
    });
  }
}

/**
 * EIP-55: an EVM address written in mixed case carries a checksum, and one that does not match it was
 * mistyped (a payment to it would reach nobody's wallet); one written in a single case carries none.
 */
function hasWrongChecksum(address: string): boolean {
  const hex = address.slice(2);
  return hex !== hex.toLowerCase() && hex !== hex.toUpperCase() && canonicalAddress(address) !== address;
}
