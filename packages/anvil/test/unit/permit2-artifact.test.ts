import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { permit2Artifact, permit2CreationCode } from '../../tools/contracts/permit2-creation-code.ts';

describe('the committed Permit2 creation code', () => {
  it('is what @uniswap/uniswapx-sdk ships, checked to deploy to the canonical address', () => {
    const committed = readFileSync(new URL('../../src/permit2-artifact.ts', import.meta.url), 'utf8');
    assert.equal(
      committed,
      permit2Artifact(permit2CreationCode()),
      'run npm run compile:contracts -w @gate402/anvil',
    );
  });
});
