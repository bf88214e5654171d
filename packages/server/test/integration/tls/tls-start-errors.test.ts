import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../../src/config.ts';
import { createLogger, startServer } from '../../../src/server.ts';
import { tempDir } from '../../support/databases.ts';
import { selfSignedCertificate, type TestCertificate } from '../../support/test-certificates.ts';

/** The problems a configuration is refused with, each naming its variable. */
function configProblems(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.problems;
  }
  assert.fail('the configuration was accepted');
}

describe('TLS settings: refused at start with the setting named', () => {
  const dir = tempDir();
  let one: TestCertificate;
  let other: TestCertificate;
  before(() => {
    one = selfSignedCertificate(dir.path, 'one');
    other = selfSignedCertificate(dir.path, 'other');
  });
  after(() => dir.dispose());

  it('takes the certificate and the key together, or neither', () => {
    assert.deepEqual(configProblems({ TLS_CERT_FILE: one.certFile }), [
      'TLS_KEY_FILE: must be set with TLS_CERT_FILE (both or neither)',
    ]);
    assert.deepEqual(configProblems({ TLS_KEY_FILE: one.keyFile }), [
      'TLS_CERT_FILE: must be set with TLS_KEY_FILE (both or neither)',
    ]);
    assert.deepEqual(configProblems({ TLS_CA_FILE: one.certFile }), [
      'TLS_CA_FILE: is only used with TLS_CERT_FILE and TLS_KEY_FILE, which are not set',
    ]);
    const config = loadConfig({ TLS_CERT_FILE: one.certFile, TLS_KEY_FILE: one.keyFile });
    assert.equal(config.tlsCertFile, one.certFile);
    assert.equal(config.tlsKeyFile, one.keyFile);
    assert.equal(config.tlsCaFile, undefined);
    const plain = loadConfig({});
    assert.deepEqual(
      [plain.tlsCertFile, plain.tlsKeyFile, plain.tlsCaFile],
      [undefined, undefined, undefined],
    );
  });

  it('names a file that is missing or is not a file', () => {
    const missing = join(dir.path, 'missing.key');
    assert.deepEqual(configProblems({ TLS_CERT_FILE: one.certFile, TLS_KEY_FILE: missing }), [
      `TLS_KEY_FILE: ${missing} does not exist`,
    ]);
    // Every problem at once: the missing file, and the key that is not set either.
    assert.deepEqual(configProblems({ TLS_CERT_FILE: join(dir.path, 'missing.crt') }), [
      `TLS_CERT_FILE: ${join(dir.path, 'missing.crt')} does not exist`,
      'TLS_KEY_FILE: must be set with TLS_CERT_FILE (both or neither)',
    ]);
    assert.deepEqual(configProblems({ TLS_CERT_FILE: dir.path, TLS_KEY_FILE: one.keyFile }), [
      `TLS_CERT_FILE: ${dir.path} is not a file`,
    ]);
  });

  /** What `gate402 serve` would print for these files: startServer's ConfigError, before anything opened. */
  async function startProblems(files: {
    cert: string;
    key: string;
    ca?: string;
  }): Promise<readonly string[]> {
    const data = tempDir();
    try {
      const config = loadConfig({
        DATA_DIR: data.path,
        PORT: '0',
        LOCALNET_PORT: '0',
        ANVIL_PORT: '0',
        TLS_CERT_FILE: files.cert,
        TLS_KEY_FILE: files.key,
        ...(files.ca === undefined ? {} : { TLS_CA_FILE: files.ca }),
      });
      let problems: readonly string[] = [];
      await assert.rejects(startServer(config, createLogger({ logLevel: 'silent' })), (error) => {
        assert.ok(error instanceof ConfigError, String(error));
        problems = error.problems;
        return true;
      });
      assert.deepEqual(readdirSync(data.path), [], 'neither storage nor a chain was started');
      return problems;
    } finally {
      data.dispose();
    }
  }

  it('refuses a key that belongs to another certificate', async () => {
    assert.deepEqual(await startProblems({ cert: one.certFile, key: other.keyFile }), [
      `TLS_KEY_FILE: the private key in ${other.keyFile} does not belong to the certificate in ${one.certFile} (TLS_CERT_FILE)`,
    ]);
  });

  it('says when the two files are swapped', async () => {
    assert.deepEqual(await startProblems({ cert: one.keyFile, key: one.certFile }), [
      `TLS_CERT_FILE: ${one.keyFile} holds no PEM certificate (-----BEGIN CERTIFICATE-----) (it holds a private key: are the files swapped?)`,
    ]);
  });

  it('refuses a key with a passphrase, and a file that is no key, never echoing it', async () => {
    const encrypted = join(dir.path, 'encrypted.key');
    execFileSync('openssl', [
      'pkey',
      '-in',
      one.keyFile,
      '-aes256',
      '-passout',
      'pass:secret',
      '-out',
      encrypted,
    ]);
    assert.deepEqual(await startProblems({ cert: one.certFile, key: encrypted }), [
      `TLS_KEY_FILE: ${encrypted} is encrypted; the gateway needs the key without a passphrase`,
    ]);

    const broken = join(dir.path, 'broken.key');
    const secret = 'c2VjcmV0LWJ5dGVzLW5vdC1hLWtleQ';
    writeFileSync(broken, `-----BEGIN PRIVATE KEY-----\n${secret}\n-----END PRIVATE KEY-----\n`);
    const [problem, ...more] = await startProblems({ cert: one.certFile, key: broken });
    assert.deepEqual(more, []);
    assert.match(problem ?? '', new RegExp(`^TLS_KEY_FILE: ${broken} holds no usable private key: `));
    assert.ok(!problem?.includes(secret), 'the file content is not echoed');
  });

  it('refuses a certificate file that does not parse, and a TLS_CA_FILE without certificates', async () => {
    const garbled = join(dir.path, 'garbled.crt');
    writeFileSync(garbled, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
    const [problem] = await startProblems({ cert: garbled, key: one.keyFile });
    assert.match(
      problem ?? '',
      new RegExp(`^TLS_CERT_FILE: the certificate in ${garbled} cannot be parsed: `),
    );

    const empty = join(dir.path, 'empty.pem');
    writeFileSync(empty, '\n');
    assert.deepEqual(await startProblems({ cert: one.certFile, key: one.keyFile, ca: empty }), [
      `TLS_CA_FILE: ${empty} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`,
    ]);
  });
});
