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
