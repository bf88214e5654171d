import assert from 'node:assert/strict';
import { copyFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { tempDir } from '../../support/databases.ts';
import { httpsGet } from '../../support/https-get.ts';
import { recordReceived } from '../../support/payment-events.ts';
import { StreamClient } from '../../support/stream-client.ts';
import { selfSignedCertificate, type TestCertificate } from '../../support/test-certificates.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

/**
 * A renewal as an operator does it: new files written over the ones TLS_CERT_FILE and TLS_KEY_FILE
 * name, then the reload SIGHUP triggers (gateway.reloadTls; e2e/serve-tls.test.ts sends the signal).
 */
describe('reloading the TLS certificate', () => {
  const dir = tempDir();
  const live = { certFile: join(dir.path, 'live.crt'), keyFile: join(dir.path, 'live.key') };
  let first: TestCertificate;
  let second: TestCertificate;
  let third: TestCertificate;
  let gw: TestGateway;
  let url: string;
  const install = (certificate: TestCertificate) => {
    copyFileSync(certificate.certFile, live.certFile);
    copyFileSync(certificate.keyFile, live.keyFile);
  };
  /** The certificate a new connection sees. */
  const served = async () =>
    (await httpsGet(`${url}/healthz`, { ca: [first.pem, second.pem, third.pem] })).fingerprint256;

  before(async () => {
    first = selfSignedCertificate(dir.path, 'first');
    second = selfSignedCertificate(dir.path, 'second');
    third = selfSignedCertificate(dir.path, 'third');
    install(first);
    gw = await startTestGateway({ tls: live, events: {} });
    url = await gw.gateway.listen();
  });
  after(async () => {
    await gw.close();
    dir.dispose();
  });

  it('serves new connections the new certificate; connections opened before keep working', async () => {
    const keepAlive = new Agent({ keepAlive: true, maxSockets: 1, ca: [first.pem, second.pem] });
    try {
      const before = await httpsGet(`${url}/healthz`, { agent: keepAlive });
      assert.equal(before.fingerprint256, first.fingerprint256);
      assert.equal(before.reusedSocket, false);

      const caller = await gw.newCaller('premium');
      const stream = new StreamClient(
        new WebSocket(`${url.replace('https', 'wss')}/v1/payments/stream`, {
          headers: bearer(caller.key),
          ca: first.pem,
        }),
      );
      await stream.until((c) => c.messages.some((m) => m.type === 'authenticated'), 5_000, 'authenticated');

      install(second);
      const reload = gw.gateway.reloadTls();
      assert.deepEqual(reload?.ok && reload.certificate.fingerprint256, second.fingerprint256);
      assert.equal(gw.gateway.tls?.current.certificate.fingerprint256, second.fingerprint256);

      // The keep-alive connection made before the reload: same socket, still the old certificate, served.
      const after = await httpsGet(`${url}/healthz`, { agent: keepAlive });
      assert.equal(after.status, 200);
      assert.equal(after.reusedSocket, true);
      assert.equal(after.socket, before.socket);
      assert.equal(after.fingerprint256, first.fingerprint256);

      // The stream opened before the reload still delivers events.
      const payment = await recordReceived(gw.services.ledger, caller.accountId, { amount: 10_000_000n });
      await stream.until((c) => c.events().length === 1, 5_000, 'the payment event');
      const [event] = stream.events();
      assert.ok(event !== undefined);
      assert.equal((event.data as { paymentId: string }).paymentId, payment.id);
      stream.close();
      await stream.closed;

      // A new connection: the new certificate, and a client trusting only the old one is refused.
      assert.equal(await served(), second.fingerprint256);
      await assert.rejects(httpsGet(`${url}/healthz`, { ca: first.pem }), {
        code: 'DEPTH_ZERO_SELF_SIGNED_CERT',
      });
    } finally {
      keepAlive.destroy();
    }
  });

  it('keeps serving the current certificate when the new files do not check out', async () => {
    install(second);
    assert.equal(gw.gateway.reloadTls()?.ok, true);

    writeFileSync(live.certFile, 'half-written\n');
    const garbage = gw.gateway.reloadTls();
    assert.equal(garbage?.ok, false);
    assert.match(
      garbage?.ok === false ? garbage.problem : '',
      /^TLS_CERT_FILE: .*live\.crt holds no PEM certificate/,
    );
    assert.equal(await served(), second.fingerprint256);

    // The new certificate with the old key: refused, nothing half-applied.
    copyFileSync(third.certFile, live.certFile);
    const mismatch = gw.gateway.reloadTls();
    assert.equal(mismatch?.ok, false);
    assert.match(
      mismatch?.ok === false ? mismatch.problem : '',
      /^TLS_KEY_FILE: the private key in .*live\.key does not belong to the certificate in .*live\.crt/,
    );
    assert.equal(await served(), second.fingerprint256);

    rmSync(live.keyFile);
    const missing = gw.gateway.reloadTls();
    assert.equal(missing?.ok, false);
    assert.match(
      missing?.ok === false ? missing.problem : '',
      /^TLS_KEY_FILE: .*live\.key cannot be read \(ENOENT\)/,
    );
    assert.equal(await served(), second.fingerprint256);
    assert.equal(gw.gateway.tls?.current.certificate.fingerprint256, second.fingerprint256);

    // Once the files are right, the next reload takes them.
    install(third);
    assert.equal(gw.gateway.reloadTls()?.ok, true);
    assert.equal(await served(), third.fingerprint256);
  });
});
