// The interface of x402's `exact` Permit2 proxy, which the facilitator calls on every network. A copy of
// the ABI @gate402/anvil compiles from its contracts/ExactPermit2Proxy.sol (the proxy it places on the
// embedded anvil); test/unit/permit2-proxy-abi.test.ts fails when the two differ. Kept here so the
// runtime does not depend on the dev-chain package for it.

export const EXACT_PERMIT2_PROXY_ABI = [
  { inputs: [], name: 'InvalidAmount', type: 'error' },
  { inputs: [], name: 'InvalidDestination', type: 'error' },
  { inputs: [], name: 'InvalidOwner', type: 'error' },
  { inputs: [], name: 'PaymentTooEarly', type: 'error' },
  { inputs: [], name: 'Permit2612AmountMismatch', type: 'error' },
  { anonymous: false, inputs: [], name: 'Settled', type: 'event' },
  { anonymous: false, inputs: [], name: 'SettledWithPermit', type: 'event' },
  {
    inputs: [],
    name: 'PERMIT2',
    outputs: [{ internalType: 'address', name: '', type: 'address' }],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [],
    name: 'WITNESS_TYPEHASH',
    outputs: [{ internalType: 'bytes32', name: '', type: 'bytes32' }],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [],
    name: 'WITNESS_TYPE_STRING',
    outputs: [{ internalType: 'string', name: '', type: 'string' }],
    stateMutability: 'view',
    type: 'function',
  },
  {
    inputs: [
      {
        components: [
          {
            components: [
              { internalType: 'address', name: 'token', type: 'address' },
              { internalType: 'uint256', name: 'amount', type: 'uint256' },
            ],
            internalType: 'struct ISignatureTransferWithWitness.TokenPermissions',
            name: 'permitted',
            type: 'tuple',
          },
          { internalType: 'uint256', name: 'nonce', type: 'uint256' },
          { internalType: 'uint256', name: 'deadline', type: 'uint256' },
        ],
        internalType: 'struct ISignatureTransferWithWitness.PermitTransferFrom',
        name: 'permit',
        type: 'tuple',
      },
      { internalType: 'address', name: 'owner', type: 'address' },
      {
        components: [
          { internalType: 'address', name: 'to', type: 'address' },
          { internalType: 'uint256', name: 'validAfter', type: 'uint256' },
        ],
        internalType: 'struct ExactPermit2Proxy.Witness',
        name: 'witness',
        type: 'tuple',
      },
      { internalType: 'bytes', name: 'signature', type: 'bytes' },
    ],
    name: 'settle',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
  {
    inputs: [
      {
        components: [
          { internalType: 'uint256', name: 'value', type: 'uint256' },
          { internalType: 'uint256', name: 'deadline', type: 'uint256' },
          { internalType: 'bytes32', name: 'r', type: 'bytes32' },
          { internalType: 'bytes32', name: 's', type: 'bytes32' },
          { internalType: 'uint8', name: 'v', type: 'uint8' },
        ],
        internalType: 'struct ExactPermit2Proxy.EIP2612Permit',
        name: 'permit2612',
        type: 'tuple',
      },
      {
        components: [
          {
            components: [
              { internalType: 'address', name: 'token', type: 'address' },
              { internalType: 'uint256', name: 'amount', type: 'uint256' },
            ],
            internalType: 'struct ISignatureTransferWithWitness.TokenPermissions',
            name: 'permitted',
            type: 'tuple',
          },
          { internalType: 'uint256', name: 'nonce', type: 'uint256' },
          { internalType: 'uint256', name: 'deadline', type: 'uint256' },
        ],
        internalType: 'struct ISignatureTransferWithWitness.PermitTransferFrom',
        name: 'permit',
        type: 'tuple',
      },
      { internalType: 'address', name: 'owner', type: 'address' },
      {
        components: [
          { internalType: 'address', name: 'to', type: 'address' },
          { internalType: 'uint256', name: 'validAfter', type: 'uint256' },
        ],
        internalType: 'struct ExactPermit2Proxy.Witness',
        name: 'witness',
        type: 'tuple',
      },
      { internalType: 'bytes', name: 'signature', type: 'bytes' },
    ],
    name: 'settleWithPermit',
    outputs: [],
    stateMutability: 'nonpayable',
    type: 'function',
  },
] as const;
