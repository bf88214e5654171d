import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { HSTS_HEADER } from '../../../src/http/plugins/hsts.ts';
import { tempDir } from '../../support/databases.ts';
import { httpsGet } from '../../support/https-get.ts';
import { recordReceived } from '../../support/payment-events.ts';
import { StreamClient } from '../../support/stream-client.ts';
import {
  certificateChain,
  selfSignedCertificate,
  type TestCertificate,
} from '../../support/test-certificates.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

describe('the gateway serving HTTPS with TLS_CERT_FILE and TLS_KEY_FILE', () => {
  const dir = tempDir();
  let certificate: TestCertificate;
  let gw: TestGateway;
  let url: string;
  before(async () => {
    certificate = selfSignedCertificate(dir.path, 'gateway');
    gw = await startTestGateway({ tls: certificate, events: {} });
    url = await gw.gateway.listen();
  });
  after(async () => {
    await gw.close();
    dir.dispose();
  });

  it('listens on an https:// URL and answers /healthz to a client trusting the certificate', async () => {
    assert.match(url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const health = await httpsGet(`${url}/healthz`, { ca: certificate.pem });
    assert.equal(health.status, 200);
    assert.deepEqual(JSON.parse(health.body), { status: 'ok' });
    assert.equal(health.fingerprint256, certificate.fingerprint256);
  });

  it('answers an authenticated endpoint over HTTPS', async () => {
    const caller = await gw.newCaller('standard');
    const account = await httpsGet(`${url}/account`, { ca: certificate.pem, headers: bearer(caller.key) });
    assert.equal(account.status, 200, account.body);
    assert.equal(JSON.parse(account.body).id, caller.accountId);
    const refused = await httpsGet(`${url}/account`, { ca: certificate.pem });
    assert.equal(refused.status, 401);
  });

  it('sends Strict-Transport-Security on every reply: success, refusal, not found', async () => {
    for (const path of ['/healthz', '/account', '/no-such-route']) {
      const answer = await httpsGet(`${url}${path}`, { ca: certificate.pem });
      assert.equal(answer.headers['strict-transport-security'], HSTS_HEADER, path);
    }
    assert.equal(HSTS_HEADER, 'max-age=31536000');
  });

  it('is real TLS: a client not trusting the certificate is refused, plain HTTP gets no answer', async () => {
    await assert.rejects(httpsGet(`${url}/healthz`), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    const port = new URL(url).port;
    const plain = await new Promise<string>((resolve) => {
      const socket = connect(Number(port), '127.0.0.1', () =>
        socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'),
      );
      let got = '';
      socket.on('data', (chunk) => {
        got += chunk.toString('latin1');
      });
      socket.on('error', () => {});
      socket.on('close', () => resolve(got));
    });
    assert.doesNotMatch(plain, /HTTP\/1\.1 200/, 'nothing is served in clear text');
  });

  it('serves the payment stream as wss on the same port, events included', async () => {
    const caller = await gw.newCaller('premium');
    const ws = new WebSocket(`${url.replace('https', 'wss')}/v1/payments/stream`, {
      headers: bearer(caller.key),
      ca: certificate.pem,
    });
    const stream = new StreamClient(ws);
    await stream.until((c) => c.messages.some((m) => m.type === 'authenticated'), 5_000, 'authenticated');
    const payment = await recordReceived(gw.services.ledger, caller.accountId, { amount: 10_000_000n });
    await stream.until((c) => c.events().length === 1, 5_000, 'the payment event');
    const [event] = stream.events();
    assert.ok(event !== undefined);
    assert.equal((event.data as { paymentId: string }).paymentId, payment.id);
    stream.close();
    await stream.closed;
  });

  it('describes the stream as wss in /asyncapi.json', async () => {
    const answer = await httpsGet(`${url}/asyncapi.json`, { ca: certificate.pem });
    assert.equal(JSON.parse(answer.body).servers.gateway.protocol, 'wss');
  });
});

describe('the gateway on plain HTTP (no TLS settings)', () => {
  let gw: TestGateway;
  let url: string;
  before(async () => {
    gw = await startTestGateway();
    url = await gw.gateway.listen();
  });
  after(() => gw.close());

  it('listens on http:// and sends no Strict-Transport-Security', async () => {
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(gw.gateway.tls, undefined);
    assert.equal(gw.gateway.reloadTls(), undefined);
    const health = await fetch(`${url}/healthz`);
    assert.equal(health.status, 200);
    assert.equal(health.headers.get('strict-transport-security'), null);
    const asyncApi = (await (await fetch(`${url}/asyncapi.json`)).json()) as {
      servers: { gateway: { protocol: string } };
    };
    assert.equal(asyncApi.servers.gateway.protocol, 'ws');
  });
});

describe('TLS_CA_FILE: intermediate certificates sent after a certificate file that holds it alone', () => {
  const dir = tempDir();
  let chain: ReturnType<typeof certificateChain>;
  before(() => {
    chain = certificateChain(dir.path, 'chain');
  });
  after(() => dir.dispose());

  it('lets a client that trusts only the root CA verify the certificate', async () => {
    const files = {
      certFile: chain.server.certFile,
      keyFile: chain.server.keyFile,
      caFile: chain.intermediate.certFile,
    };
    const gw = await startTestGateway({ tls: files });
    try {
      const url = await gw.gateway.listen();
      const health = await httpsGet(`${url}/healthz`, { ca: chain.root.pem });
      assert.equal(health.status, 200);
      assert.equal(health.fingerprint256, chain.server.fingerprint256);
      const sent = health.socket.getPeerCertificate(true);
      assert.equal(sent.issuerCertificate.fingerprint256, chain.intermediate.fingerprint256);
    } finally {
      await gw.close();
    }
  });

  it('without it, the same client cannot (the intermediate was missing)', async () => {
    const gw = await startTestGateway({
      tls: { certFile: chain.server.certFile, keyFile: chain.server.keyFile },
    });
    try {
      const url = await gw.gateway.listen();
      await assert.rejects(httpsGet(`${url}/healthz`, { ca: chain.root.pem }), {
        code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      });
    } finally {
      await gw.close();
    }
  });
});

describe('slow TLS clients', () => {
  const REQUEST_TIMEOUT_MS = 500;
  const dir = tempDir();
  let certificate: TestCertificate;
  let gw: TestGateway;
  let port: number;
  before(async () => {
    certificate = selfSignedCertificate(dir.path, 'slow');
    gw = await startTestGateway({ tls: certificate, requestTimeoutMs: REQUEST_TIMEOUT_MS });
    port = Number(new URL(await gw.gateway.listen()).port);
  });
  after(async () => {
    await gw.close();
    dir.dispose();
  });

  /** Milliseconds until the server closed a connection that `start` opened and then left silent. */
  const closedAfter = (start: () => Socket) =>
    new Promise<number>((resolve) => {
      const started = Date.now();
      const socket = start();
      socket.on('error', () => {});
      // Still open well past the timeout: the test fails with the time, rather than hanging for 120 s.
      const giveUp = setTimeout(() => socket.destroy(), REQUEST_TIMEOUT_MS * 4);
      socket.on('close', () => {
        clearTimeout(giveUp);
        resolve(Date.now() - started);
      });
    });

  it('closes a connection that never starts the TLS handshake within REQUEST_TIMEOUT_MS', async () => {
    // Without its own limit the handshake would wait Node's 120 s, before any request timer starts.
    const ms = await closedAfter(() => connect(port, '127.0.0.1'));
    assert.ok(ms >= REQUEST_TIMEOUT_MS - 50 && ms < REQUEST_TIMEOUT_MS * 2, `closed after ${ms} ms`);
  });
});
