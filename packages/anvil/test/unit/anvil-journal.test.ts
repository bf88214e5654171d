import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { entriesToKeep } from '../../src/anvil-journal.ts';

describe('the anvil journal stays small on a long run', () => {
  it('keeps only the blocks mined less than a minute before anvil last wrote its state, and every later one', () => {
    const entry = (number: bigint, timestamp: bigint) => ({ number, timestamp, transactions: [] });
    const entries = [entry(1n, 1000n), entry(2n, 1939n), entry(3n, 1940n), entry(4n, 2100n)];
    assert.deepEqual(
      entriesToKeep(entries, 2000n).map((e) => e.number),
      [3n, 4n],
    );
    assert.deepEqual(entriesToKeep(entries, 5000n), []);
    assert.deepEqual(
      entriesToKeep(entries, 0n).map((e) => e.number),
      [1n, 2n, 3n, 4n],
    );
  });
});
