import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The certificates of a test: a CA, a server certificate it signed, a client pair it signed, and a stranger's client pair. */
export interface TestCertificates {
  dir: string;
  caCert: string;
  serverCert: string;
  serverKey: string;
  /** For a server on 127.0.0.1 (and `localhost`): PostgreSQL. */
  loopbackCert: string;
  loopbackKey: string;
  clientCert: string;
  clientKey: string;
  /** A client pair signed by another CA: the proxy must refuse it. */
  strangerCert: string;
  strangerKey: string;
  /** A client pair of the test CA that expired the second it was made. */
  expiredCert: string;
  expiredKey: string;
  /** The only name the server certificate carries (no IP address): clients must set it. */
  serverName: string;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

function newCa(dir: string, name: string): void {
  openssl(dir, [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '2', '-subj', `/CN=${name}`,
  ]); // prettier-ignore
}

/** A key and a certificate for `subject` signed by the CA `ca`, with `extensions`, valid for `days`. */
function signed(dir: string, ca: string, name: string, subject: string, extensions: string[], days = 2): void {
  writeFileSync(path.join(dir, `${name}.cnf`), ['basicConstraints=CA:FALSE', ...extensions].join('\n') + '\n');
  openssl(dir, [
    'req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${subject}`,
  ]); // prettier-ignore
  openssl(dir, [
    'x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial',
    '-out', `${name}.crt`, '-days', String(days), '-extfile', `${name}.cnf`,
  ]); // prettier-ignore
}

/** Makes the test's certificates with the `openssl` CLI, in a new directory. */
export function makeTestCertificates(): TestCertificates {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-tls-'));
  const serverName = 'temporal.test';
  newCa(dir, 'ca');
  newCa(dir, 'stranger-ca');
  signed(dir, 'ca', 'server', serverName, [
    'keyUsage=digitalSignature',
    'extendedKeyUsage=serverAuth',
    `subjectAltName=DNS:${serverName}`,
  ]);
  signed(dir, 'ca', 'loopback', 'localhost', [
    'keyUsage=digitalSignature',
    'extendedKeyUsage=serverAuth',
    'subjectAltName=DNS:localhost,IP:127.0.0.1',
  ]);
  const client = ['keyUsage=digitalSignature', 'extendedKeyUsage=clientAuth'];
  signed(dir, 'ca', 'client', 'agent-runs', client);
  signed(dir, 'stranger-ca', 'stranger', 'agent-runs', client);
  signed(dir, 'ca', 'expired', 'agent-runs', client, 0);
  const file = (name: string) => path.join(dir, name);
  return {
    dir,
    caCert: file('ca.crt'),
    serverCert: file('server.crt'),
    serverKey: file('server.key'),
    loopbackCert: file('loopback.crt'),
    loopbackKey: file('loopback.key'),
    clientCert: file('client.crt'),
    clientKey: file('client.key'),
    strangerCert: file('stranger.crt'),
    strangerKey: file('stranger.key'),
    expiredCert: file('expired.crt'),
    expiredKey: file('expired.key'),
    serverName,
  };
}
