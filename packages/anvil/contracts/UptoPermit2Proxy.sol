// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.37;

/** The part of Uniswap's Permit2 (SignatureTransfer) this proxy calls. */
interface IPermit2WitnessTransfer {
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

/** EIP-2612's permit, which `settleWithPermit` tries before settling. */
interface IErc2612 {
    function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        external;
}

/**
 * gate402's own implementation of the x402 `upto` Permit2 proxy interface (`settle`, `settleWithPermit`),
 * placed at x402's canonical upto proxy address on the embedded EVM chain only; real networks carry
 * x402's deployed proxy.
 *
 * A buyer signs a Permit2 PermitWitnessTransferFrom for a MAXIMUM, whose spender is this contract and
 * whose witness names the recipient and the one facilitator allowed to settle it. Permit2 checks the
 * signature against msg.sender (this contract) and the witness, and this contract lets only the named
 * facilitator call it; that facilitator chooses the amount moved, at most the signed maximum, once
 * (Permit2 burns the nonce whatever the amount), to exactly the signed recipient. It holds no funds and
 * keeps no state beyond a re-entrancy lock.
 */
contract UptoPermit2Proxy {
    /** Permit2's canonical address, the same on every chain (CREATE2). */
    address public constant PERMIT2 = 0x000000000022D473030F116dDEE9F6B43aC78BA3;

    /**
     * The witness part of the EIP-712 type Permit2 hashes after its own prefix; with the referenced types
     * in alphabetical order, as EIP-712 encodes them and x402 clients sign them.
     */
    string public constant WITNESS_TYPE_STRING =
        "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,address facilitator,uint256 validAfter)";
    bytes32 public constant WITNESS_TYPEHASH =
        keccak256("Witness(address to,address facilitator,uint256 validAfter)");

    struct Witness {
        address to;
        address facilitator;
        uint256 validAfter;
    }

    struct EIP2612Permit {
        uint256 value;
        uint256 deadline;
        bytes32 r;
        bytes32 s;
        uint8 v;
    }

    event Settled();
    event SettledWithPermit();

    error AmountExceedsPermitted();
    error InvalidDestination();
    error InvalidOwner();
    error InvalidPermit2Address();
    error PaymentTooEarly();
    error Permit2612AmountMismatch();
    error ReentrancyGuardReentrantCall();
    error UnauthorizedFacilitator();

    /** Transient storage slot of the re-entrancy lock (cleared at the end of every transaction). */
    uint256 private constant LOCK_SLOT = uint256(keccak256("gate402.UptoPermit2Proxy.lock"));

    modifier locked() {
        uint256 slot = LOCK_SLOT;
        uint256 held;
        assembly {
            held := tload(slot)
        }
        if (held != 0) revert ReentrancyGuardReentrantCall();
        assembly {
            tstore(slot, 1)
        }
        _;
        assembly {
            tstore(slot, 0)
        }
    }

    /** Moves `amount` (at most `permit.permitted.amount`) of the permitted token from `owner` to `witness.to`. */
    function settle(
        IPermit2WitnessTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external locked {
        _transfer(permit, amount, owner, witness, signature);
        emit Settled();
    }

    /**
     * As `settle`, after trying the buyer's EIP-2612 permit that approves Permit2 for the token (its value
     * must be the permitted maximum). A permit the token refuses (already used, or an approval that exists
     * anyway) does not stop the settlement: Permit2 refuses it when the approval is missing.
     */
    function settleWithPermit(
        EIP2612Permit calldata permit2612,
        IPermit2WitnessTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external locked {
        if (permit2612.value != permit.permitted.amount) revert Permit2612AmountMismatch();
        _tryPermit(permit.permitted.token, owner, permit2612);
        _transfer(permit, amount, owner, witness, signature);
        emit SettledWithPermit();
    }

    function _tryPermit(address token, address owner, EIP2612Permit calldata permit2612) private {
        try IErc2612(token).permit(
            owner, PERMIT2, permit2612.value, permit2612.deadline, permit2612.v, permit2612.r, permit2612.s
        ) {} catch {}
    }

    function _transfer(
        IPermit2WitnessTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) private {
        // The signed witness names who may settle: nobody else can choose the amount.
        if (msg.sender != witness.facilitator) revert UnauthorizedFacilitator();
        if (amount > permit.permitted.amount) revert AmountExceedsPermitted();
        if (owner == address(0)) revert InvalidOwner();
        if (witness.to == address(0)) revert InvalidDestination();
        if (block.timestamp < witness.validAfter) revert PaymentTooEarly();
        IPermit2WitnessTransfer(PERMIT2).permitWitnessTransferFrom(
            permit,
            IPermit2WitnessTransfer.SignatureTransferDetails({to: witness.to, requestedAmount: amount}),
            owner,
            keccak256(abi.encode(WITNESS_TYPEHASH, witness.to, witness.facilitator, witness.validAfter)),
            WITNESS_TYPE_STRING,
            signature
        );
    }
}
