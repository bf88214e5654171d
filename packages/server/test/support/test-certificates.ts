import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A certificate and its key as files, the way an operator hands them to TLS_CERT_FILE / TLS_KEY_FILE. */
export interface TestCertificate {
  readonly certFile: string;
  readonly keyFile: string;
  /** The certificate's PEM, for a client's `ca` (a self-signed certificate is its own CA). */
  readonly pem: string;
  /** As `socket.getPeerCertificate().fingerprint256` shows it. */
  readonly fingerprint256: string;
}

/** The subject alternative names every test certificate carries: the address tests connect to. */
const LOCAL_NAMES = 'subjectAltName=IP:127.0.0.1,DNS:localhost';

/**
 * A self-signed certificate for 127.0.0.1 and localhost, valid one day, with a fresh P-256 key, made by
 * the openssl command (files `<name>.crt` and `<name>.key` in `dir`).
 */
export function selfSignedCertificate(dir: string, name: string): TestCertificate {
  return selfSigned(dir, name, [LOCAL_NAMES]);
}

/**
 * A root CA, an intermediate CA it signed, and a server certificate the intermediate signed; the server
 * certificate's file holds it alone, so a client trusting only the root needs the intermediate sent.
 */
export function certificateChain(dir: string, name: string) {
  const root = selfSignedCa(dir, `${name}-root`);
  const intermediate = signed(dir, `${name}-intermediate`, root, [
    'basicConstraints=critical,CA:TRUE,pathlen:0',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  const server = signed(dir, `${name}-server`, intermediate, [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature',
    'extendedKeyUsage=serverAuth',
    LOCAL_NAMES,
  ]);
  return { root, intermediate, server };
}

function selfSignedCa(dir: string, name: string): TestCertificate {
  return selfSigned(dir, name, [
    'basicConstraints=critical,CA:TRUE',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
}

/** A self-signed certificate valid one day, with a fresh key and these X.509 extensions. */
function selfSigned(dir: string, name: string, extensions: readonly string[]): TestCertificate {
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  const subject = ['-subj', `/CN=gate402 test ${name}`];
  openssl([
    'req',
    '-x509',
    ...newKey(keyFile),
    '-out',
    certFile,
    '-days',
    '1',
    ...subject,
    ...extensions.flatMap((e) => ['-addext', e]),
  ]);
  return described(certFile, keyFile);
}

function signed(dir: string, name: string, issuer: TestCertificate, extensions: string[]): TestCertificate {
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  const csrFile = join(dir, `${name}.csr`);
  const extFile = join(dir, `${name}.ext`);
  openssl(['req', '-new', ...newKey(keyFile), '-out', csrFile, '-subj', `/CN=gate402 test ${name}`]);
  writeFileSync(extFile, `${extensions.join('\n')}\n`);
  openssl([
    'x509',
    '-req',
    '-in',
    csrFile,
    '-CA',
    issuer.certFile,
    '-CAkey',
    issuer.keyFile,
    '-set_serial',
    `0x${Date.now().toString(16)}`,
    '-days',
    '1',
    '-extfile',
    extFile,
    '-out',
    certFile,
  ]);
  return described(certFile, keyFile);
}

function newKey(keyFile: string): string[] {
  return ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', keyFile];
}

function described(certFile: string, keyFile: string): TestCertificate {
  const pem = readFileSync(certFile, 'utf8');
  return { certFile, keyFile, pem, fingerprint256: new X509Certificate(pem).fingerprint256 };
}

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}
