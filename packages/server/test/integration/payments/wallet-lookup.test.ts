import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { generateSolanaKeypair } from '../../../src/chains/solana/solana-keypair.ts';
import { GatewayError } from '../../../src/domain/gateway-error.ts';
import { SecretBox } from '../../../src/services/custody/secret-box.ts';
import { WalletService } from '../../../src/services/wallets/wallet-service.ts';
import { openStore } from '../../../src/store/open-store.ts';
import type { Store } from '../../../src/store/store.ts';
import { type TempStorage, tempSqlite } from '../../support/databases.ts';
import { signChallenge } from '../../support/proof-of-control.ts';
import { aTestAccount } from '../../support/test-account.ts';

const KEY = generateSolanaKeypair();
const ADDRESS = KEY.address;

const forbidden = (error: unknown) => error instanceof GatewayError && error.code === 'FORBIDDEN';

/**
 * WalletService keeps the wallets it found by address in memory (a wallet never changes or goes away).
 * What it must not keep is an address it did not find: another instance may register it at any moment.
 */
describe('Wallet lookups kept in memory', () => {
  let temp: TempStorage;
  let first: Store;
  let second: Store;
  let onFirst: WalletService;
  let onSecond: WalletService;

  before(async () => {
    temp = tempSqlite();
    ({ store: first } = await openStore(temp.location));
    ({ store: second } = await openStore(temp.location));
    const secrets = new SecretBox(randomBytes(32));
    onFirst = new WalletService(first, new NetworkRegistry([]), secrets);
    onSecond = new WalletService(second, new NetworkRegistry([]), secrets);
    for (const id of ['acct_a', 'acct_b']) await first.accounts.insert(aTestAccount(id));
  });

  after(async () => {
    await first.close();
    await second.close();
    await temp.dispose();
  });

  it('finds a wallet another instance registered after this one was asked for it', async () => {
    await assert.rejects(onFirst.owned('acct_a', ADDRESS), forbidden, 'not registered yet');
    const { challenge } = await onSecond.challenge('acct_a', { chain: 'solana', address: ADDRESS });
    const signature = await signChallenge(KEY, challenge);
    await onSecond.watch('acct_a', { chain: 'solana', address: ADDRESS, challenge, signature });
    assert.equal((await onFirst.owned('acct_a', ADDRESS)).accountId, 'acct_a');
  });

  it('still refuses the wallet to another account once it is kept', async () => {
    assert.equal((await onFirst.owned('acct_a', ADDRESS)).address, ADDRESS);
    await assert.rejects(onFirst.owned('acct_b', ADDRESS), forbidden);
  });
});
