import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, type Config } from '../core/config';
import { keyringOf, parseSecretsKey, type SecretsKeyring } from '../core/secrets-keyring';

/** Name of the key file `npm start` keeps in the data directory. */
export const SECRETS_KEY_FILE = 'secrets.key';

/**
 * The keys that encrypt request-supplied credentials at rest and sign URLs: SECRETS_ENCRYPTION_KEYS
 * or SECRETS_ENCRYPTION_KEY (checked by loadConfig), else `<data dir>/secrets.key`. With `create`,
 * a missing key file is generated (mode 0600), so `npm start` needs no setup; without it, no key
 * is an error that says how to make one.
 */
export function resolveSecretsKeyring(config: Config, options: { create?: boolean } = {}): SecretsKeyring {
  if (config.secretsKeyring !== undefined) return config.secretsKeyring;
  const file = path.join(config.dataDir, SECRETS_KEY_FILE);
  if (existsSync(file)) return keyringOf(readKeyFile(file));
  if (!options.create) {
    throw new ConfigError(
      `Invalid configuration:\n  SECRETS_ENCRYPTION_KEY is not set (nor SECRETS_ENCRYPTION_KEYS) and there is no key file ${file}. ` +
        'Set SECRETS_ENCRYPTION_KEY to 32 random bytes (generate them with `openssl rand -base64 32`), ' +
        'the same value for the API and every worker.',
    );
  }
  return keyringOf(createKeyFile(file));
}

function readKeyFile(file: string): Buffer {
  try {
    return parseSecretsKey(readFileSync(file, 'utf8'));
  } catch {
    throw new ConfigError(
      `The key file ${file} does not hold a valid key (32 bytes as base64 or hex). Restore it, or set ` +
        'SECRETS_ENCRYPTION_KEY to the key it held: credentials stored under another key cannot be decrypted.',
    );
  }
}

/** Writes a new key atomically: another process starting at the same moment reads the same key. */
function createKeyFile(file: string): Buffer {
  mkdirSync(path.dirname(file), { recursive: true });
  const key = randomBytes(32);
  const temp = `${file}.${process.pid}.tmp`;
  rmSync(temp, { force: true }); // left by a crash: `mode` applies only to a file this call creates
  writeFileSync(temp, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(temp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return readKeyFile(file);
  } finally {
    rmSync(temp, { force: true });
  }
  return key;
}
