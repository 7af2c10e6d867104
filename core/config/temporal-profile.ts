import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  loadClientConfigProfile,
  toClientOptions,
  type ClientConfigProfile,
  type ConfigDataSource,
} from '@temporalio/envconfig';
import { ConfigError } from './parsers';

/**
 * How the service reaches Temporal, read the way Temporal's own tools read it
 * (`@temporalio/envconfig`): the TOML profile (`TEMPORAL_CONFIG_FILE`, else the user's
 * `temporalio/temporal.toml`; `TEMPORAL_PROFILE`, else `default`), overridden by `TEMPORAL_*`
 * variables. Certificates are read and checked here, at start.
 */
export interface TemporalConnectionSettings {
  /** Unset: the dev server `npm start` runs. */
  address?: string;
  namespace?: string;
  apiKey?: string;
  /** `false`: plaintext; `true`: TLS against the system's roots; an object: its CA, client pair, server name. */
  tls?: boolean | TemporalTls;
  /** gRPC headers of every call (`TEMPORAL_GRPC_META_*`, a profile's `grpc_meta`). */
  metadata?: Record<string, string>;
  /** What the start-up line and connection errors say: `plaintext`, `TLS`, `mTLS`, each `+ API key`. */
  security: string;
  /** The variables (or profile keys) that set TLS and the key: what a connection error names. */
  sources: string[];
}

export interface TemporalTls {
  serverNameOverride?: string;
  serverRootCACertificate?: Uint8Array;
  clientCertPair?: { crt: Uint8Array; key: Uint8Array };
}

type Env = Record<string, string>;
type Part = 'clientCert' | 'clientKey' | 'serverCACert';

const PART_VARIABLES: Record<Part, { path: string; data: string; key: string }> = {
  clientCert: { path: 'TEMPORAL_TLS_CLIENT_CERT_PATH', data: 'TEMPORAL_TLS_CLIENT_CERT_DATA', key: 'client_cert' },
  clientKey: { path: 'TEMPORAL_TLS_CLIENT_KEY_PATH', data: 'TEMPORAL_TLS_CLIENT_KEY_DATA', key: 'client_key' },
  serverCACert: {
    path: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
    data: 'TEMPORAL_TLS_SERVER_CA_CERT_DATA',
    key: 'server_ca_cert',
  },
};

/** Where a TLS part came from, as a person would look for it: the variable, else the profile's key. */
function partOrigin(part: Part, source: ConfigDataSource, env: Env): string {
  const names = PART_VARIABLES[part];
  const form = 'path' in source ? 'path' : 'data';
  const variable = form === 'path' ? names.path : names.data;
  if (env[variable] !== undefined) return 'path' in source ? `${variable}=${source.path}` : variable;
  const profile = env.TEMPORAL_PROFILE ?? 'default';
  const where = `tls.${names.key}_${form} of profile "${profile}" in ${env.TEMPORAL_CONFIG_FILE ?? 'the Temporal config file'}`;
  return 'path' in source ? `${where} (${source.path})` : where;
}

function tlsProblem(origin: string, problem: string): ConfigError {
  return new ConfigError(`Invalid configuration:\n  Temporal TLS: ${origin}: ${problem}`);
}

function readPart(part: Part, source: ConfigDataSource, env: Env): Buffer {
  if ('data' in source) return Buffer.from(source.data);
  try {
    return readFileSync(source.path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw tlsProblem(partOrigin(part, source, env), `cannot be read (${code})`);
  }
}

function parseCertificate(part: Part, source: ConfigDataSource, bytes: Buffer, env: Env): X509Certificate {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(bytes);
  } catch {
    throw tlsProblem(partOrigin(part, source, env), 'is not a PEM certificate');
  }
  const validTo = new Date(certificate.validTo);
  if (validTo.getTime() <= Date.now())
    throw tlsProblem(partOrigin(part, source, env), `expired on ${validTo.toISOString()}`);
  return certificate;
}

function parseKey(source: ConfigDataSource, bytes: Buffer, env: Env): KeyObject {
  try {
    return createPrivateKey(bytes);
  } catch {
    throw tlsProblem(partOrigin('clientKey', source, env), 'is not a PEM private key');
  }
}

/** Reads every TLS file once, checks what can be checked before connecting, and hands the bytes on as data. */
function checkedTls(tls: NonNullable<ClientConfigProfile['tls']>, env: Env): NonNullable<ClientConfigProfile['tls']> {
  const { clientCert, clientKey, serverCACert } = tls;
  if ((clientCert === undefined) !== (clientKey === undefined)) {
    const [given, missing]: [Part, Part] = clientCert ? ['clientCert', 'clientKey'] : ['clientKey', 'clientCert'];
    throw tlsProblem(
      partOrigin(given, (clientCert ?? clientKey)!, env),
      `is set without ${PART_VARIABLES[missing].path} (or _DATA): mTLS needs the certificate and its key`,
    );
  }
  const checked = { ...tls };
  if (serverCACert) {
    const bytes = readPart('serverCACert', serverCACert, env);
    parseCertificate('serverCACert', serverCACert, bytes, env);
    checked.serverCACert = { data: bytes };
  }
  if (clientCert && clientKey) {
    const certBytes = readPart('clientCert', clientCert, env);
    const keyBytes = readPart('clientKey', clientKey, env);
    const certificate = parseCertificate('clientCert', clientCert, certBytes, env);
    if (!certificate.checkPrivateKey(parseKey(clientKey, keyBytes, env)))
      throw tlsProblem(partOrigin('clientKey', clientKey, env), 'is not the key of the client certificate');
    checked.clientCert = { data: certBytes };
    checked.clientKey = { data: keyBytes };
  }
  return checked;
}

function loadProfile(env: Env): ClientConfigProfile {
  try {
    return loadClientConfigProfile({ overrideEnvVars: env });
  } catch (err) {
    const where = env.TEMPORAL_CONFIG_FILE
      ? `TEMPORAL_CONFIG_FILE=${env.TEMPORAL_CONFIG_FILE}`
      : 'the Temporal config file';
    const message = err instanceof Error ? err.message : String(err);
    throw new ConfigError(`Invalid configuration:\n  Temporal profile (${where}, TEMPORAL_PROFILE): ${message}`);
  }
}

/** The variables (and the file's profile) that set TLS or the key: what a connection failure may be about. */
function sourcesOf(env: Env): string[] {
  const named = Object.keys(env)
    .filter((name) => name.startsWith('TEMPORAL_TLS') || name === 'TEMPORAL_API_KEY')
    .map((name) => (name.endsWith('_PATH') ? `${name}=${env[name]}` : name));
  const fromFile = loadClientConfigProfile({ overrideEnvVars: env, disableEnv: true });
  return fromFile.tls || fromFile.apiKey ? [...named, `TEMPORAL_PROFILE=${env.TEMPORAL_PROFILE ?? 'default'}`] : named;
}

function securityOf(tls: TemporalConnectionSettings['tls'], apiKey: string | undefined): string {
  const transport =
    tls === undefined || tls === false ? 'plaintext' : tls !== true && tls.clientCertPair ? 'mTLS' : 'TLS';
  return apiKey === undefined ? transport : `${transport} + API key`;
}

/** Reads the Temporal connection as `temporal` and the SDKs do; a file or certificate problem is a ConfigError. */
export function temporalConnectionFrom(env: Env): TemporalConnectionSettings {
  const profile = loadProfile(env);
  if (profile.tls) profile.tls = checkedTls(profile.tls, env);
  const { namespace, connectionOptions } = toClientOptions(profile);
  const tls = (connectionOptions.tls ?? undefined) as TemporalConnectionSettings['tls'];
  const apiKey = typeof connectionOptions.apiKey === 'string' ? connectionOptions.apiKey : undefined;
  if (connectionOptions.address === undefined && (apiKey !== undefined || (tls !== undefined && tls !== false)))
    throw new ConfigError(
      'Invalid configuration:\n  TEMPORAL_ADDRESS: required with TLS or an API key for Temporal (the embedded dev server `npm start` runs takes neither)',
    );
  return {
    address: connectionOptions.address,
    namespace,
    apiKey,
    tls,
    metadata: profile.grpcMeta,
    security: securityOf(tls, apiKey),
    sources: sourcesOf(env),
  };
}
