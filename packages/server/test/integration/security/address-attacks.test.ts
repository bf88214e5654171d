import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { canonicalAddress as canonical } from '../../../src/chains/canonical-address.ts';
import { generateSolanaKeypair } from '../../../src/chains/solana/solana-keypair.ts';
import { newEvmLocalWallet } from '../../support/evm-local-signer.ts';
import { type AddressKey, chainOf, signChallenge, watchAddress } from '../../support/proof-of-control.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

/**
 * Squatting a seller's payout address: an attacker with an API key of its own registers, as its
 * watch-only wallet, an address it does not control — the seller's external payTo — to be recorded as
 * the one paid. Every door a signature does not open must stay shut, on both chain families, and leave
 * no wallet row behind. One row per attack: a new way in is one more row.
 */

type Family = 'solana' | 'evm';
type Caller = { readonly accountId: string; readonly key: string };

interface World {
  readonly gw: TestGateway;
  /** The seller, who controls `sellerKey`'s address but has not registered it (yet). */
  readonly seller: Caller;
  readonly attacker: Caller;
  readonly family: Family;
  /** The seller's address: what the attacker wants. */
  readonly sellerKey: AddressKey;
  /** A key the attacker holds. */
  readonly attackerKey: AddressKey;
  /** Moves the gateway's clock. */
  advance(ms: number): void;
  challenge(caller: Caller, address: string): Promise<LightMyRequestResponse>;
  register(caller: Caller, body: Record<string, unknown>): Promise<LightMyRequestResponse>;
}

interface Attack {
  readonly name: string;
  /** The attacker's last request; the answer is what the row expects. */
  readonly run: (w: World) => Promise<LightMyRequestResponse>;
  readonly status: number;
  readonly code: string;
  /** The field `error.details` must name. */
  readonly field: string;
  /** The address that must end up with no wallet of the attacker's (default: the seller's). */
  readonly target?: (w: World) => string;
  /** Where the attack means something (letter case is a spelling on EVM only). Default: both. */
  readonly families?: readonly Family[];
}

/** A challenge the caller got for `address`, signed by `key`, as POST /wallets would take it. */
async function signedBody(w: World, caller: Caller, address: string, key: AddressKey) {
  const issued = await w.challenge(caller, address);
  assert.equal(issued.statusCode, 200, issued.body);
  const challenge = issued.json().challenge as string;
  return {
    chain: w.family,
    address,
    watchOnly: true,
    challenge,
    signature: await signChallenge(key, challenge),
  };
}

const ATTACKS: readonly Attack[] = [
  {
    name: 'registers the seller’s address with no challenge and no signature',
    run: (w) => w.register(w.attacker, { chain: w.family, address: w.sellerKey.address, watchOnly: true }),
    status: 400,
    code: 'INVALID_PARAMETERS',
    field: 'signature',
  },
  {
    name: 'answers its own challenge for the seller’s address with a signature by its own key',
    run: async (w) =>
      w.register(w.attacker, await signedBody(w, w.attacker, w.sellerKey.address, w.attackerKey)),
    status: 400,
    code: 'INVALID_SIGNATURE',
    field: 'signature',
  },
  {
    name: 'sends a garbage signature',
    run: async (w) =>
      w.register(w.attacker, {
        ...(await signedBody(w, w.attacker, w.sellerKey.address, w.attackerKey)),
        signature: 'not-a-signature',
      }),
    status: 400,
    code: 'INVALID_SIGNATURE',
    field: 'signature',
  },
  {
    name: 'replays the seller’s own signed challenge (issued to the seller’s account)',
    run: async (w) => w.register(w.attacker, await signedBody(w, w.seller, w.sellerKey.address, w.sellerKey)),
    status: 403,
    code: 'CHALLENGE_ACCOUNT_MISMATCH',
    field: 'challenge',
  },
  {
    name: 'edits the account named in the seller’s signed challenge to its own',
    run: async (w) => {
      const body = await signedBody(w, w.seller, w.sellerKey.address, w.sellerKey);
      return w.register(w.attacker, {
        ...body,
        challenge: body.challenge.replaceAll(w.seller.accountId, w.attacker.accountId),
      });
    },
    status: 400,
    code: 'INVALID_CHALLENGE',
    field: 'challenge',
  },
  {
    name: 'uses a challenge signed for its own address to register the seller’s',
    run: async (w) =>
      w.register(w.attacker, {
        ...(await signedBody(w, w.attacker, w.attackerKey.address, w.attackerKey)),
        address: w.sellerKey.address,
      }),
    status: 400,
    code: 'CHALLENGE_ADDRESS_MISMATCH',
    field: 'address',
  },
  {
    name: 'replays a challenge it already used',
    run: async (w) => {
      const body = await signedBody(w, w.attacker, w.attackerKey.address, w.attackerKey);
      assert.equal((await w.register(w.attacker, body)).statusCode, 200);
      return w.register(w.attacker, body);
    },
    status: 400,
    code: 'CHALLENGE_ALREADY_USED',
    field: 'challenge',
    target: (w) => w.sellerKey.address,
  },
  {
    name: 'answers a challenge after its 10 minutes',
    run: async (w) => {
      const body = await signedBody(w, w.attacker, w.attackerKey.address, w.attackerKey);
      w.advance(10 * 60_000);
      return w.register(w.attacker, body);
    },
    status: 400,
    code: 'CHALLENGE_EXPIRED',
    field: 'challenge',
    target: (w) => w.attackerKey.address,
  },
  {
    name: 'asks for a challenge for an address the seller holds, spelled in lower case',
    run: async (w) => {
      assert.equal((await watchAddress(w.gw, w.seller.key, w.sellerKey)).statusCode, 200);
      return w.challenge(w.attacker, w.sellerKey.address.toLowerCase());
    },
    status: 409,
    code: 'WALLET_ALREADY_REGISTERED',
    field: 'address',
    families: ['evm'],
  },
  {
    name: 'registers an address the seller holds, spelled in upper case, with a signature by its key',
    run: async (w) => {
      // The worst case: the attacker has the seller's key too, and a challenge issued before the seller
      // registered. The address is still the seller's.
      const upper = spelledUpper(w.sellerKey.address);
      const body = await signedBody(w, w.attacker, upper, w.sellerKey);
      assert.equal((await watchAddress(w.gw, w.seller.key, w.sellerKey)).statusCode, 200);
      return w.register(w.attacker, body);
    },
    status: 409,
    code: 'WALLET_ALREADY_REGISTERED',
    field: 'address',
  },
];

/** EVM: 0x and the 40 hex digits upper-cased; Solana addresses are case-sensitive and stay. */
function spelledUpper(address: string): string {
  return address.startsWith('0x') ? `0x${address.slice(2).toUpperCase()}` : address;
}

const KEYS: Record<Family, () => AddressKey> = {
  solana: generateSolanaKeypair,
  evm: newEvmLocalWallet,
};

for (const family of ['solana', 'evm'] as const) {
  describe(`Squatting a seller's address on ${family}: refused, nothing stored`, () => {
    let gw: TestGateway;
    let clock = Date.now();

    before(async () => {
      gw = await startTestGateway({ now: () => clock });
    });
    after(() => gw.close());

    /** A fresh seller, attacker and keys per row, so one row's wallets do not answer for another's. */
    const world = async (): Promise<World> => {
      const post = (caller: Caller, url: string, payload: object) =>
        gw.app.inject({ method: 'POST', url, headers: bearer(caller.key), payload });
      return {
        gw,
        seller: await gw.newCaller(),
        attacker: await gw.newCaller(),
        family,
        sellerKey: KEYS[family](),
        attackerKey: KEYS[family](),
        advance: (ms) => {
          clock += ms;
        },
        challenge: (caller, address) => post(caller, '/wallets/challenge', { chain: family, address }),
        register: (caller, body) => post(caller, '/wallets', body),
      };
    };

    for (const attack of ATTACKS.filter((a) => a.families?.includes(family) ?? true)) {
      it(`${attack.name}: ${attack.status} ${attack.code}`, async () => {
        const w = await world();
        const before = await gw.store.wallets.listByAccount(w.attacker.accountId);
        const res = await attack.run(w);
        assert.equal(res.statusCode, attack.status, res.body);
        const { error } = res.json();
        assert.equal(error.code, attack.code, res.body);
        assert.ok(error.details?.[attack.field], `details name ${attack.field}: ${res.body}`);
        assert.ok(
          !res.body.includes(w.seller.accountId) || attack.code === 'INVALID_CHALLENGE',
          'never names the holder',
        );
        // No trace: the attacker has the wallets it had, and the target is not one of them.
        const target = attack.target?.(w) ?? w.sellerKey.address;
        const held = await gw.store.wallets.findByAddress(family, canonical(target));
        assert.notEqual(held?.accountId, w.attacker.accountId, 'the target is not the attacker’s');
        const after = await gw.store.wallets.listByAccount(w.attacker.accountId);
        const added = after.filter((wallet) => !before.some((b) => b.id === wallet.id));
        assert.ok(
          added.every((wallet) => wallet.address === canonical(w.attackerKey.address)),
          `nothing but the attacker's own address was registered: ${JSON.stringify(added)}`,
        );
      });
    }

    it('answers an address held by another account and one held by the caller alike, naming no account', async () => {
      const w = await world();
      assert.equal((await watchAddress(gw, w.seller.key, w.sellerKey)).statusCode, 200);
      const theirs = await w.challenge(w.attacker, w.sellerKey.address);
      const own = await w.challenge(w.seller, w.sellerKey.address);
      assert.equal(theirs.statusCode, 409);
      const { requestId: _theirs, ...theirAnswer } = theirs.json().error;
      const { requestId: _own, ...ownAnswer } = own.json().error;
      assert.deepEqual(theirAnswer, ownAnswer);
      assert.ok(!theirs.body.includes(w.seller.accountId));
    });

    it('lets one of two registrations answering one challenge at the same instant through', async () => {
      const w = await world();
      const issued = await w.challenge(w.seller, w.sellerKey.address);
      const challenge = issued.json().challenge as string;
      const body = {
        chain: family,
        address: w.sellerKey.address,
        watchOnly: true,
        challenge,
        signature: await signChallenge(w.sellerKey, challenge),
      };
      const answers = await Promise.all([w.register(w.seller, body), w.register(w.seller, body)]);
      assert.deepEqual(
        answers.map((a) => a.statusCode).sort(),
        [200, 400],
        answers.map((a) => a.body).join(),
      );
      assert.equal(answers.find((a) => a.statusCode === 400)?.json().error.code, 'CHALLENGE_ALREADY_USED');
      assert.equal(
        (await gw.store.wallets.findByAddress(family, canonical(w.sellerKey.address)))?.accountId,
        w.seller.accountId,
      );
    });

    it('registers the seller’s address for the seller, who signs its own challenge', async () => {
      const w = await world();
      const res = await watchAddress(gw, w.seller.key, w.sellerKey, {
        spelling: family === 'evm' ? w.sellerKey.address.toLowerCase() : w.sellerKey.address,
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().address, w.sellerKey.address, 'stored in its canonical spelling');
      assert.equal(res.json().watchOnly, true);
      assert.equal(chainOf(w.sellerKey), family);
    });
  });
}
