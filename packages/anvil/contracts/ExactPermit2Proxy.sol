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

/** EIP-2612's `permit`, which the proxy calls on the token to approve Permit2 for the owner. */
interface IERC20PermitOnly {
    function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        external;
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
 *
 * `settleWithPermit` (x402's `eip2612GasSponsoring` extension) first submits the owner's EIP-2612 permit
 * approving Permit2 on the token for exactly the permitted amount, then settles as `settle` does: a buyer
 * who never approved Permit2 pays without sending a transaction. The permit's own failure is ignored (it
 * may have been submitted by someone else first, or the approval exist already); the settlement then
 * stands or falls on Permit2's allowance alone. Re-entering through a token's `permit` can only settle
 * another permit its owner signed, so no guard is needed.
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

    /** The EIP-2612 permit of `settleWithPermit`, its signature split as the token's `permit` takes it. */
    struct EIP2612Permit {
        uint256 value;
        uint256 deadline;
        bytes32 r;
        bytes32 s;
        uint8 v;
    }

    event Settled();
    event SettledWithPermit();

    error InvalidAmount();
    error InvalidOwner();
    error InvalidDestination();
    error PaymentTooEarly();
    error Permit2612AmountMismatch();

    /** Moves `permit.permitted.amount` of `permit.permitted.token` from `owner` to `witness.to`. */
    function settle(
        ISignatureTransferWithWitness.PermitTransferFrom calldata permit,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external {
        _settle(permit, owner, witness, signature);
        emit Settled();
    }

    /**
     * As `settle`, after submitting `owner`'s EIP-2612 permit that approves Permit2 for exactly the
     * permitted amount (any other value reverts): no prior approval of Permit2 is needed.
     */
    function settleWithPermit(
        EIP2612Permit calldata permit2612,
        ISignatureTransferWithWitness.PermitTransferFrom calldata permit,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external {
        if (permit2612.value != permit.permitted.amount) revert Permit2612AmountMismatch();
        try IERC20PermitOnly(permit.permitted.token).permit(
            owner, PERMIT2, permit2612.value, permit2612.deadline, permit2612.v, permit2612.r, permit2612.s
        ) {} catch {}
        _settle(permit, owner, witness, signature);
        emit SettledWithPermit();
    }

    function _settle(
        ISignatureTransferWithWitness.PermitTransferFrom calldata permit,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) private {
        // A transfer of nothing would only burn the owner's nonce.
        if (permit.permitted.amount == 0) revert InvalidAmount();
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
    }
}
