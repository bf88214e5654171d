import { canonicalAddress } from '../chains/canonical-address.ts';
import { addressFamily } from '../domain/address.ts';
import { GatewayError, invalidParameters } from '../domain/gateway-error.ts';

/**
 * Solana accounts that are no wallet: the runtime's reserved account keys (every sysvar, the native and
 * builtin programs, the BPF loaders, as Agave's ReservedAccountKeys lists them, active and pending) and
 * the SPL programs a payment meets (Token, Token-2022, Associated Token Account, Memo). None can sign a
 * transfer, and none is ever whom a buyer means to pay. A reserved account's write lock is demoted, so a
 * transfer to it fails on chain after its fee was paid (one to a program the transfer itself invokes —
 * System, Compute Budget, Memo — cannot even be compiled: 500); SOL sent to an SPL program fails the
 * same way or, where the chain lets an executable account be credited (the embedded localnet does), is
 * lost for good: nothing gives lamports back from a program account.
 */
export const SOLANA_RESERVED_ACCOUNTS: Readonly<Record<string, string>> = {
  // The programs a SOL transfer invokes.
  '11111111111111111111111111111111': 'System Program',
  ComputeBudget111111111111111111111111111111: 'Compute Budget Program',
  MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr: 'Memo Program',
  // Sysvars, and the program that owns them.
  SysvarC1ock11111111111111111111111111111111: 'Clock Sysvar',
  SysvarEpochRewards1111111111111111111111111: 'Epoch Rewards Sysvar',
  SysvarEpochSchedu1e111111111111111111111111: 'Epoch Schedule Sysvar',
  SysvarFees111111111111111111111111111111111: 'Fees Sysvar',
  Sysvar1nstructions1111111111111111111111111: 'Instructions Sysvar',
  SysvarLastRestartS1ot1111111111111111111111: 'Last Restart Slot Sysvar',
  SysvarRecentB1ockHashes11111111111111111111: 'Recent Blockhashes Sysvar',
  SysvarRent111111111111111111111111111111111: 'Rent Sysvar',
  SysvarRewards111111111111111111111111111111: 'Rewards Sysvar',
  SysvarS1otHashes111111111111111111111111111: 'Slot Hashes Sysvar',
  SysvarS1otHistory11111111111111111111111111: 'Slot History Sysvar',
  SysvarStakeHistory1111111111111111111111111: 'Stake History Sysvar',
  Sysvar1111111111111111111111111111111111111: 'Sysvar Program',
  // Native and builtin programs.
  Vote111111111111111111111111111111111111111: 'Vote Program',
  Stake11111111111111111111111111111111111111: 'Stake Program',
  StakeConfig11111111111111111111111111111111: 'Stake Config account',
  Config1111111111111111111111111111111111111: 'Config Program',
  Feature111111111111111111111111111111111111: 'Feature Program',
  AddressLookupTab1e1111111111111111111111111: 'Address Lookup Table Program',
  Ed25519SigVerify111111111111111111111111111: 'Ed25519 Program',
  KeccakSecp256k11111111111111111111111111111: 'Secp256k1 Program',
  Secp256r1SigVerify1111111111111111111111111: 'Secp256r1 Program',
  ZkE1Gama1Proof11111111111111111111111111111: 'ZK ElGamal Proof Program',
  ZkTokenProof1111111111111111111111111111111: 'ZK Token Proof Program',
  // Loaders.
  NativeLoader1111111111111111111111111111111: 'Native Loader',
  BPFLoader1111111111111111111111111111111111: 'deprecated BPF Loader',
  BPFLoader2111111111111111111111111111111111: 'BPF Loader',
  BPFLoaderUpgradeab1e11111111111111111111111: 'Upgradeable BPF Loader',
  LoaderV411111111111111111111111111111111111: 'Loader v4',
  // SPL programs.
  TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA: 'Token Program',
  TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb: 'Token-2022 Program',
  ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL: 'Associated Token Account Program',
  Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo: 'Memo Program (v1)',
};

/** The name of the reserved account (program or sysvar) that `address` is, on Solana; undefined for any other. */
function reservedAccount(family: string, address: string): string | undefined {
  return family === 'solana' && Object.hasOwn(SOLANA_RESERVED_ACCOUNTS, address)
    ? SOLANA_RESERVED_ACCOUNTS[address]
    : undefined;
}

/** The payer of a send (spec §4.1, §4.5): an address that can sign a transfer on its chain. */
export function checkPayer(family: string, walletAddress: string): void {
  const program = reservedAccount(family, walletAddress);
  if (program !== undefined) {
    throw invalidParameters({ walletAddress: `is the ${program}, which cannot sign a transfer` });
  }
}

/**
 * The rules of the recipient (spec §7 INVALID_RECIPIENT): same family, not the payer, not a Solana
 * program or sysvar.
 */
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
  const program = reservedAccount(family, recipientAddress);
  if (program !== undefined) {
    throw new GatewayError('INVALID_RECIPIENT', {
      message: `The ${program} is no wallet: it cannot receive a payment.`,
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
