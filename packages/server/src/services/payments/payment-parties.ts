import { canonicalAddress } from '../../chains/canonical-address.ts';
import { chainFamily } from '../../chains/chain-families.ts';
import { addressFamily, type ChainFamily } from '../../domain/address.ts';
import { GatewayError, invalidParameters } from '../../domain/gateway-error.ts';

/** The name of the reserved account (a program or sysvar) that `address` is; undefined for any other. */
function reservedAccount(family: ChainFamily, address: string): string | undefined {
  return chainFamily(family).reservedAccount(address);
}

/** The payer of a send (spec §4.1, §4.5): an address that can sign a transfer on its chain. */
export function checkPayer(family: ChainFamily, walletAddress: string): void {
  const program = reservedAccount(family, walletAddress);
  if (program !== undefined) {
    throw invalidParameters({ walletAddress: `is the ${program}, which cannot sign a transfer` });
  }
}

/**
 * The rules of the recipient (spec §7 INVALID_RECIPIENT): same family, not the payer, not a Solana
 * program or sysvar.
 */
export function checkRecipient(family: ChainFamily, walletAddress: string, recipientAddress: string): void {
  if (addressFamily(recipientAddress) !== family) {
    throw new GatewayError('INVALID_RECIPIENT', {
      message: `The recipient is not ${chainFamily(family).addressName}.`,
      details: { recipientAddress: `must be ${chainFamily(family).addressName}` },
    });
  }
  const problem = chainFamily(family).recipientProblem(recipientAddress);
  if (problem !== undefined) {
    throw new GatewayError('INVALID_RECIPIENT', {
      message: problem.message,
      details: { recipientAddress: problem.detail },
    });
  }
  if (canonicalAddress(recipientAddress) === canonicalAddress(walletAddress)) {
    throw new GatewayError('INVALID_RECIPIENT', {
      message: 'A wallet cannot pay itself.',
      details: { recipientAddress: 'must differ from walletAddress' },
    });
  }
  const program = reservedAccount(family, recipientAddress);
  if (program !== undefined) {
    throw new GatewayError('INVALID_RECIPIENT', {
      message: `The ${program} is no wallet: it cannot receive a payment.`,
      details: { recipientAddress: `is the ${program}` },
    });
  }
}

/**
 * A token sent to the token's own contract or mint is lost for good: nobody can move it from there
 * (INVALID_RECIPIENT, before anything is signed). Addresses in their canonical spelling.
 */
export function checkTokenRecipient(tokenAddress: string | null, recipientAddress: string): void {
  if (tokenAddress === null || canonicalAddress(tokenAddress) !== recipientAddress) return;
  throw new GatewayError('INVALID_RECIPIENT', {
    message: 'The recipient is the token itself; tokens sent there can never be moved again.',
    details: { recipientAddress: 'must not be the address of the token being sent' },
  });
}
