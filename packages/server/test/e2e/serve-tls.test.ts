import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { tempDir } from '../support/databases.ts';
import { GATE402_COMMAND } from '../support/gate402-command.ts';
import { httpsGet } from '../support/https-get.ts';
import { selfSignedCertificate, type TestCertificate } from '../support/test-certificates.ts';

function env(extra: Record<string, string>): NodeJS.ProcessEnv {
  // The command must not see the CI's database settings; the embedded chains take free ports.
  const { DATABASE_URL: _d, REDIS_URL: _r, ...rest } = process.env;
  return { ...rest, LOG_LEVEL: 'info', LOCALNET_PORT: '0', ANVIL_PORT: '0', PORT: '0', ...extra };
}

/** Resolves once `output()` matches `pattern`; rejects after `timeoutMs` with what was printed. */
async function printed(output: () => string, pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = pattern.exec(output());
    if (match !== null) return match;
    if (Date.now() > deadline) throw new Error(`waited for ${pattern} in:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('gate402 serve with TLS', () => {
  const dir = tempDir();
  const live = { cert: join(dir.path, 'live.crt'), key: join(dir.path, 'live.key') };
  let first: TestCertificate;
  let second: TestCertificate;
  before(() => {
    first = selfSignedCertificate(dir.path, 'first');
    second = selfSignedCertificate(dir.path, 'second');
  });
  after(() => dir.dispose());

  it('refuses a key of another certificate with one clear line and exit code 2, no stack trace', () => {
    const data = tempDir();
    try {
      const run = spawnSync(process.execPath, [...GATE402_COMMAND, 'serve'], {
        env: env({ DATA_DIR: data.path, TLS_CERT_FILE: first.certFile, TLS_KEY_FILE: second.keyFile }),
        encoding: 'utf8',
        timeout: 30_000,
      });
      assert.equal(run.status, 2, run.stderr);
      assert.equal(
        run.stderr,
        `gate402: invalid configuration:\n  - TLS_KEY_FILE: the private key in ${second.keyFile} does not belong to the certificate in ${first.certFile} (TLS_CERT_FILE)\n`,
      );
      assert.equal(run.stdout, '');
    } finally {
      data.dispose();
    }
  });

  it('reloads the certificate on SIGHUP without dropping a connection, and keeps it when the files are bad', async () => {
    copyFileSync(first.certFile, live.cert);
    copyFileSync(first.keyFile, live.key);
    const data = tempDir();
    const child: ChildProcess = spawn(process.execPath, [...GATE402_COMMAND, 'serve'], {
      env: env({
        DATA_DIR: data.path,
        GATE402_DEMO: 'false',
        TLS_CERT_FILE: live.cert,
        TLS_KEY_FILE: live.key,
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    const output = () => text;
    const keepAlive = new Agent({ keepAlive: true, maxSockets: 1, ca: [first.pem, second.pem] });
    try {
      const [, url = ''] = await printed(output, /listening on (https:\/\/\S+)/, 60_000);
      const fresh = async () =>
        (await httpsGet(`${url}/healthz`, { ca: [first.pem, second.pem] })).fingerprint256;

      const before = await httpsGet(`${url}/healthz`, { agent: keepAlive });
      assert.equal(before.status, 200);
      assert.equal(before.fingerprint256, first.fingerprint256);
      assert.equal(before.headers['strict-transport-security'], 'max-age=31536000');

      copyFileSync(second.certFile, live.cert);
      copyFileSync(second.keyFile, live.key);
      child.kill('SIGHUP');
      await printed(output, /TLS certificate reloaded/, 10_000);
      assert.equal(await fresh(), second.fingerprint256);
      const after = await httpsGet(`${url}/healthz`, { agent: keepAlive });
      assert.equal(after.status, 200);
      assert.equal(after.reusedSocket, true, 'the connection opened before the reload is still open');
      assert.equal(after.fingerprint256, first.fingerprint256);

      writeFileSync(live.cert, 'not a certificate\n');
      child.kill('SIGHUP');
      const [refused = ''] = await printed(output, /.*TLS certificate not reloaded.*/, 10_000);
      assert.match(refused, /TLS_CERT_FILE: .*live\.crt holds no PEM certificate/);
      assert.equal(await fresh(), second.fingerprint256, 'still the certificate that was good');
      assert.equal(child.exitCode, null, 'the gateway is still running');
    } finally {
      keepAlive.destroy();
      child.kill('SIGTERM');
      assert.equal(await exited, 0, `SIGTERM shuts down cleanly:\n${output()}`);
      data.dispose();
    }
  });
});
