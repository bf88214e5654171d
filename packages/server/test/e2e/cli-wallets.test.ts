import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { generateSolanaKeypair } from '../../src/chains/solana/solana-keypair.ts';
import { tempDir } from '../support/databases.ts';
import { newEvmLocalWallet } from '../support/evm-local-signer.ts';
import { gate402Json, gate402Text } from '../support/gate402-cli.ts';
import { type AddressKey, chainOf, signChallenge } from '../support/proof-of-control.ts';

/** `gate402 wallets challenge` then `watch`: the CLI takes the same proof of control as the API. */
describe('gate402 wallets challenge / watch', () => {
  let dir: ReturnType<typeof tempDir>;
  let account: string;
  let other: string;

  before(() => {
    dir = tempDir();
    account = gate402Json(dir.path, ['accounts', 'create', '--name', 'seller', '--plan', 'standard']).json.id;
    other = gate402Json(dir.path, ['accounts', 'create', '--name', 'other', '--plan', 'standard']).json.id;
  });
  after(() => dir.dispose());

  for (const key of [generateSolanaKeypair(), newEvmLocalWallet()] as AddressKey[]) {
    const chain = chainOf(key);
    it(`${chain}: prints a challenge, registers on its signature, refuses another key's`, async () => {
      const address = chain === 'evm' ? key.address.toLowerCase() : key.address;
      const base = ['wallets', '--account', account, '--chain', chain, '--address', address];
      // Without --json the text alone, ready for a file or "$(…)".
      const printed = gate402Text(dir.path, ['wallets', 'challenge', ...base.slice(1)]);
      assert.equal(printed.code, 0, printed.stderr);
      const challenge = printed.stdout;
      assert.match(challenge, new RegExp(`Account: ${account}`));
      const file = join(dir.path, `challenge-${chain}.txt`);
      writeFileSync(file, challenge);

      const unsigned = gate402Text(dir.path, [
        'wallets',
        'watch',
        ...base.slice(1),
        '--challenge-file',
        file,
      ]);
      assert.equal(unsigned.code, 2, 'wrong usage');
      assert.match(unsigned.stderr, /--signature is required/);

      const impostor = chain === 'evm' ? newEvmLocalWallet() : generateSolanaKeypair();
      const forged = gate402Json(dir.path, [
        'wallets',
        'watch',
        ...base.slice(1),
        '--challenge-file',
        file,
        '--signature',
        await signChallenge(impostor, challenge),
      ]);
      assert.equal(forged.code, 1);
      assert.equal(forged.json.error.code, 'INVALID_SIGNATURE');

      const watched = gate402Json(dir.path, [
        'wallets',
        'watch',
        ...base.slice(1),
        '--challenge-file',
        file,
        '--signature',
        // What a tool signing the file signs: the text and the newline the command ended it with.
        await signChallenge(key, challenge),
      ]);
      assert.equal(watched.code, 0, watched.stderr);
      assert.deepEqual([watched.json.address, watched.json.watchOnly], [key.address, true]);

      const taken = gate402Json(dir.path, [
        'wallets',
        'challenge',
        '--account',
        other,
        '--chain',
        chain,
        '--address',
        address,
      ]);
      assert.equal(taken.code, 1);
      assert.equal(taken.json.error.code, 'WALLET_ALREADY_REGISTERED');
    });
  }
});
