import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { type Config, ConfigError } from '../../config.ts';

/** The files TLS_CERT_FILE, TLS_KEY_FILE and TLS_CA_FILE name, as absolute paths. */
export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile?: string | undefined;
}

/** What an operator needs to see which certificate is served (logged at start and on each reload). */
export interface CertificateSummary {
  /** SHA-256 of the DER certificate, `AB:CD:…`, as browsers and `openssl x509 -fingerprint -sha256` show it. */
  readonly fingerprint256: string;
  readonly subject: string;
  readonly subjectAltName: string | undefined;
  readonly validTo: Date;
}

/** A certificate chain and its key, checked to belong together, ready for a TLS server. */
export interface TlsCredentials {
  /** The options node:tls takes, for `https.createServer` and `server.setSecureContext`. */
  readonly options: { readonly cert: string; readonly key: Buffer };
  readonly certificate: CertificateSummary;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** The TLS files of the configuration; undefined when the gateway serves plain HTTP. */
export function tlsFiles(
  config: Pick<Config, 'tlsCertFile' | 'tlsKeyFile' | 'tlsCaFile'>,
): TlsFiles | undefined {
  if (config.tlsCertFile === undefined || config.tlsKeyFile === undefined) return undefined;
  return { certFile: config.tlsCertFile, keyFile: config.tlsKeyFile, caFile: config.tlsCaFile };
}

/**
 * Reads and checks the certificate files, the same way at start and on every reload: each PEM block
 * parses, the private key belongs to the first certificate, and OpenSSL accepts the whole. A problem is a
 * ConfigError naming the setting and the file, never the key's bytes, so `gate402 serve` prints one clear
 * line instead of an OpenSSL stack.
 */
export function readTlsCredentials(files: TlsFiles): TlsCredentials {
  const certText = readText('TLS_CERT_FILE', files.certFile);
  const keyBytes = readBytes('TLS_KEY_FILE', files.keyFile);
  const certificates = parseCertificates('TLS_CERT_FILE', files.certFile, certText);
  const intermediates =
    files.caFile === undefined
      ? []
      : parseCertificates('TLS_CA_FILE', files.caFile, readText('TLS_CA_FILE', files.caFile));
  const key = parsePrivateKey(files.keyFile, keyBytes);
  const [leaf] = certificates;
  if (leaf === undefined) throw problem('TLS_CERT_FILE', `${files.certFile} holds no certificate`);
  if (!leaf.x509.checkPrivateKey(key)) {
    throw problem(
      'TLS_KEY_FILE',
      `the private key in ${files.keyFile} does not belong to the certificate in ${files.certFile} (TLS_CERT_FILE)`,
    );
  }
  // Node sends the `cert` chain as written: the certificate, then its intermediates. TLS_CA_FILE's
  // certificates are appended rather than passed as `ca`, which would make them trust anchors for
  // client certificates and leave it to OpenSSL whether they are sent at all.
  const options = {
    cert: [...certificates, ...intermediates].map((c) => c.pem).join('\n'),
    key: keyBytes,
  };
  try {
    createSecureContext(options);
  } catch (error) {
    throw problem('TLS_CERT_FILE', `${files.certFile} is refused by OpenSSL: ${(error as Error).message}`);
  }
  return {
    options,
    certificate: {
      fingerprint256: leaf.x509.fingerprint256,
      subject: leaf.x509.subject.replaceAll('\n', ', '),
      subjectAltName: leaf.x509.subjectAltName,
      validTo: new Date(leaf.x509.validTo),
    },
  };
}

function problem(setting: string, message: string): ConfigError {
  return new ConfigError([`${setting}: ${message}`]);
}

function readBytes(setting: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw problem(setting, `${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

function readText(setting: string, path: string): string {
  return readBytes(setting, path).toString('utf8');
}

function parseCertificates(
  setting: string,
  path: string,
  text: string,
): { pem: string; x509: X509Certificate }[] {
  const blocks = text.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) {
    const hint = /PRIVATE KEY-----/.test(text) ? ' (it holds a private key: are the files swapped?)' : '';
    throw problem(setting, `${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)${hint}`);
  }
  return blocks.map((pem, index) => {
    try {
      return { pem, x509: new X509Certificate(pem) };
    } catch (error) {
      const which = blocks.length === 1 ? 'the certificate' : `certificate ${index + 1}`;
      throw problem(setting, `${which} in ${path} cannot be parsed: ${(error as Error).message}`);
    }
  });
}

/** Never echoes the file's content: it is the secret half. */
function parsePrivateKey(path: string, bytes: Buffer): KeyObject {
  const text = bytes.toString('utf8');
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text)) {
    const hint = /BEGIN CERTIFICATE/.test(text) ? ' (it holds a certificate: are the files swapped?)' : '';
    throw problem('TLS_KEY_FILE', `${path} holds no PEM private key (-----BEGIN PRIVATE KEY-----)${hint}`);
  }
  if (/ENCRYPTED/.test(text)) {
    throw problem('TLS_KEY_FILE', `${path} is encrypted; the gateway needs the key without a passphrase`);
  }
  try {
    return createPrivateKey(bytes);
  } catch (error) {
    throw problem('TLS_KEY_FILE', `${path} holds no usable private key: ${(error as Error).message}`);
  }
}
