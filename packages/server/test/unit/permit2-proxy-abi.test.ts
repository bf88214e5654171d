import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as devChain from '@gate402/anvil';
import { x402ExactPermit2ProxyABI, x402ExactPermit2ProxyAddress } from '@x402/evm';
import { type AbiEvent, type AbiFunction, toEventSignature, toFunctionSignature } from 'viem';
import { EXACT_PERMIT2_PROXY_ADDRESS, PERMIT2_ADDRESS } from '../../src/chains/evm/permit2-addresses.ts';
import { EXACT_PERMIT2_PROXY_ABI } from '../../src/chains/evm/permit2-proxy-abi.ts';

// The gateway keeps what it needs of Permit2 on real networks (the proxy's ABI, the two canonical
// addresses) in its own sources; @gate402/anvil compiles the proxy and places both contracts on the
// embedded chain. Both must describe the same contracts.
describe("the gateway's Permit2 proxy interface", () => {
  it('is the ABI @gate402/anvil compiles from contracts/ExactPermit2Proxy.sol', () => {
    assert.deepEqual(
      EXACT_PERMIT2_PROXY_ABI,
      devChain.EXACT_PERMIT2_PROXY_ABI,
      'copy EXACT_PERMIT2_PROXY_ABI from packages/anvil/src/permit2-proxy-artifact.ts',
    );
  });

  it('names the addresses where the embedded chain places Permit2 and the proxy', () => {
    assert.equal(PERMIT2_ADDRESS, devChain.PERMIT2_ADDRESS);
    assert.equal(EXACT_PERMIT2_PROXY_ADDRESS, devChain.EXACT_PERMIT2_PROXY_ADDRESS);
  });

  // The stock EVM facilitator (@x402/evm) encodes its calls with its own copy of x402's ABI: gate402's
  // proxy on the embedded chain must answer every call and event it knows (settle, settleWithPermit,
  // Settled, SettledWithPermit) exactly, and revert only with errors it can name.
  it("answers every function and event of x402's canonical exact Permit2 proxy, as @x402/evm encodes them", () => {
    const signatures = (abi: readonly { type: string }[]) =>
      new Set(
        abi.flatMap((item) =>
          item.type === 'function'
            ? [toFunctionSignature(item as AbiFunction)]
            : item.type === 'event'
              ? [toEventSignature(item as AbiEvent)]
              : [],
        ),
      );
    const ours = signatures(EXACT_PERMIT2_PROXY_ABI);
    const stock = signatures(x402ExactPermit2ProxyABI);
    assert.ok(
      stock.has(
        'settleWithPermit((uint256,uint256,bytes32,bytes32,uint8),((address,uint256),uint256,uint256),address,(address,uint256),bytes)',
      ),
    );
    assert.deepEqual(
      [...stock].filter((s) => !ours.has(s)),
      [],
      'the stock ABI has these, ours not',
    );
    assert.deepEqual(
      [...ours].filter((s) => !stock.has(s)),
      [],
      'ours has these, the stock ABI not',
    );
    const stockErrors = new Set(
      x402ExactPermit2ProxyABI.filter((i) => i.type === 'error').map((i) => i.name),
    );
    const ourErrors = EXACT_PERMIT2_PROXY_ABI.filter((i) => i.type === 'error').map((i) => i.name);
    assert.deepEqual(
      ourErrors.filter((e) => !stockErrors.has(e)),
      [],
    );
    assert.equal(EXACT_PERMIT2_PROXY_ADDRESS, x402ExactPermit2ProxyAddress);
  });
});
