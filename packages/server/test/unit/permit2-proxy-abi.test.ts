import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as devChain from '@gate402/anvil';
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
});
