// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.37;

/** The part of Uniswap's Permit2 (SignatureTransfer) this proxy calls. */
interface ISignatureTransferWithWitness {
    struct TokenPermissions {
        address token;
        uint256 amount;
    }

    struct PermitTransferFrom {
        TokenPermissions permitted;
        uint256 nonce;
        uint256 deadline;
    }

    struct SignatureTransferDetails {
        address to;
        uint256 requestedAmount;
    }

    function permitWitnessTransferFrom(
        PermitTransferFrom calldata permit,
        SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes32 witness,
        string calldata witnessTypeString,
        bytes calldata signature
    ) external;
}

/**
 * gate402's own implementation of the x402 `exact` Permit2 proxy interface (`settle`), placed at x402's
 * canonical proxy address on the embedded EVM chain only; real networks carry x402's deployed proxy.
 *
 * A buyer signs a Permit2 PermitWitnessTransferFrom whose spender is this contract and whose witness
 * names the recipient. Permit2 checks the signature against msg.sender (this contract) and the witness,
 * so whoever submits `settle` (the facilitator, paying the gas) can move exactly the permitted amount,
 * once (Permit2 burns the nonce), to exactly the signed recipient, and nothing else. It holds no funds
 * and no state.
 */
contract ExactPermit2Proxy {
    /** Permit2's canonical address, the same on every chain (CREATE2). */
    address public constant PERMIT2 = 0x000000000022D473030F116dDEE9F6B43aC78BA3;

    /**
     * The witness part of the EIP-712 type Permit2 hashes after its own prefix; with the referenced
     * types in alphabetical order, as EIP-712 encodes them and x402 clients sign them.
     */
    string public constant WITNESS_TYPE_STRING =
        "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,uint256 validAfter)";
    bytes32 public constant WITNESS_TYPEHASH = keccak256("Witness(address to,uint256 validAfter)");

    struct Witness {
        address to;
        uint256 validAfter;
    }

    event Settled();

    error InvalidOwner();
    error InvalidDestination();
    error PaymentTooEarly();

    /** Moves `permit.permitted.amount` of `permit.permitted.token` from `owner` to `witness.to`. */
    function settle(
        ISignatureTransferWithWitness.PermitTransferFrom calldata permit,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external {
        if (owner == address(0)) revert InvalidOwner();
        if (witness.to == address(0)) revert InvalidDestination();
        if (block.timestamp < witness.validAfter) revert PaymentTooEarly();
        ISignatureTransferWithWitness(PERMIT2).permitWitnessTransferFrom(
            permit,
            ISignatureTransferWithWitness.SignatureTransferDetails({
                to: witness.to,
                // Always the whole permitted amount: the submitter cannot choose to move less.
                requestedAmount: permit.permitted.amount
            }),
            owner,
            keccak256(abi.encode(WITNESS_TYPEHASH, witness.to, witness.validAfter)),
            WITNESS_TYPE_STRING,
            signature
        );
        emit Settled();
    }
}
