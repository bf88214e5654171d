import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type DashboardApp, startDashboardApp } from '../support/dashboard-app.ts';

const PASSWORD = 'correct horse battery';
const VICTIM = 'victim@example.test';

/** Failed log-ins cannot lock a user out: docs/dashboard.md. */
describe('dashboard log-in: limited guessing without a lock-out', () => {
  let gw: DashboardApp;
  before(async () => {
    gw = await startDashboardApp({ loginAttempts: 10 });
    const res = await gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/signup',
      payload: { email: VICTIM, password: PASSWORD },
      remoteAddress: '198.51.100.200',
    });
    assert.equal(res.statusCode, 200);
  });
  after(() => gw.close());

  const logIn = (password: string, remoteAddress: string) =>
    gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/login',
      payload: { email: VICTIM, password },
      remoteAddress,
    });

  it("limits one address guessing someone's password, and the owner logs in from another meanwhile", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await logIn('wrong password!', '203.0.113.1')).statusCode);
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 401, 401, 401, 401, 401, 429, 429]);
    // The right password from the attacker's address is refused too: the limit comes before the check.
    assert.equal((await logIn(PASSWORD, '203.0.113.1')).statusCode, 429);
    assert.equal((await logIn(PASSWORD, '198.51.100.9')).statusCode, 200);
  });

  it('gives many addresses guessing one account one guess each, and still lets the owner in', async () => {
    // Past five times the limit in failures for the email, an address that failed once is refused.
    for (let i = 0; i < 50; i++) {
      assert.equal((await logIn('wrong password!', `192.0.2.${i}`)).statusCode, 401);
    }
    const again = await logIn('wrong password!', '192.0.2.1');
    assert.equal(again.statusCode, 429);
    assert.equal(again.json().error.code, 'RATE_LIMIT_EXCEEDED');
    assert.equal((await logIn(PASSWORD, '192.0.2.2')).statusCode, 429, 'even with the right password');
    // An address that has not failed for this email: the right password works, a wrong one is one guess.
    assert.equal((await logIn(PASSWORD, '198.51.100.10')).statusCode, 200);
    assert.equal((await logIn('wrong password!', '198.51.100.11')).statusCode, 401);
    assert.equal((await logIn('wrong password!', '198.51.100.11')).statusCode, 429);
  });
});
