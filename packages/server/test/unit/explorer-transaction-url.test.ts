import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { explorerTransactionUrl } from '../../src/chains/chain-families.ts';

describe('explorer links', () => {
  it('points public networks at their explorer and local ones nowhere', () => {
    assert.equal(
      explorerTransactionUrl('solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', 'SiG'),
      'https://explorer.solana.com/tx/SiG',
    );
    assert.equal(
      explorerTransactionUrl('solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1', 'SiG'),
      'https://explorer.solana.com/tx/SiG?cluster=devnet',
    );
    assert.equal(explorerTransactionUrl('eip155:8453', '0xabc'), 'https://basescan.org/tx/0xabc');
    assert.equal(explorerTransactionUrl('eip155:84532', '0xabc'), 'https://sepolia.basescan.org/tx/0xabc');
    assert.equal(explorerTransactionUrl('solana:6hauQuE7XotE5hBiyRtXBGev1X9TSmYQ', 'SiG'), undefined);
    assert.equal(explorerTransactionUrl('eip155:31337', '0xabc'), undefined);
    assert.equal(explorerTransactionUrl('cosmos:hub', 'x'), undefined);
  });

  it('escapes what it puts in the path', () => {
    assert.equal(explorerTransactionUrl('eip155:1', '../x?y'), 'https://etherscan.io/tx/..%2Fx%3Fy');
  });
});
