import pino, { type DestinationStream, type Logger as PinoLogger } from 'pino';
import pretty from 'pino-pretty';
import type { Config } from './config';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
/** `json`: one JSON object per line (production); `pretty`: one readable line per entry (a terminal). */
export type LogFormat = 'json' | 'pretty';
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds `bindings` to every line (e.g. `{ run_id, step }`). */
  child(bindings: LogFields): Logger;
}

export interface LoggerOptions {
  /** Default `json`. */
  format?: LogFormat;
  /** Where lines go; default stderr, so stdout stays free for what a command prints. */
  destination?: DestinationStream;
  /** Exact values masked wherever they appear in a line (see `secretsOfConfig`). */
  secretValues?: string[];
}

export const REDACTED = '[redacted]';

/**
 * Field names whose value is a secret (or holds some: MCP `headers` and `env`, HTTP headers):
 * masked at the top of a line by pino's `redact` and at any depth below by `scrubSecretFields`
 * (pino's wildcard paths cost some 40 µs a line per level, a walk of a small object almost nothing).
 */
const SECRET_FIELDS = [
  'authorization',
  'Authorization',
  'cookie',
  'Cookie',
  'headers',
  'env',
  'apiKey',
  'api_key',
  'rawKey',
  'raw_key',
  'token',
  'accessToken',
  'access_token',
  'refreshToken',
  'refresh_token',
  'gitToken',
  'git_token',
  'password',
  'passwd',
  'secret',
  'secrets',
  'clientSecret',
  'client_secret',
  'webhookSecret',
  'webhook_secret',
  'signature',
  'signingKey',
  'signing_key',
  'secretsKey',
  'secretsKeyring',
  'privateKey',
  'private_key',
  'connectionString',
  'databaseUrl',
  'database_url',
  'OPENAI_API_KEY',
  'ANTHROPIC_API_KEY',
  'GEMINI_API_KEY',
  'GIT_TOKEN',
  'SECRETS_ENCRYPTION_KEY',
  'SECRETS_ENCRYPTION_KEYS',
  'DATABASE_URL',
];
const SECRET_FIELD_SET = new Set(SECRET_FIELDS);

/** Where this service's own objects keep secrets under names that do not say so. */
const SECRET_PATHS = [
  'config.database.url',
  'config.models.openai.apiKey',
  'config.models.anthropic.apiKey',
  'config.models.gemini.apiKey',
  'config.workspace.gitToken',
  'config.secretsKeyring',
  'config.temporal.connection.apiKey',
  'config.temporal.connection.tls',
  'config.temporal.connection.metadata',
  'mcp_servers.*.headers',
  'mcp_servers.*.env',
  'mcpServers.*.headers',
  'mcpServers.*.env',
  'config.mcp_servers.*.headers',
  'config.mcp_servers.*.env',
  'req.headers.authorization',
  'req.headers.cookie',
  'webhook.secret',
];
const REDACT_PATHS = [...SECRET_FIELDS, ...SECRET_PATHS];

/**
 * Secrets recognisable by their form, wherever they appear in a line (an error message quoting
 * a URL or a header, a string field): the user-info password of a URL, bearer tokens, this
 * service's API keys, Standard Webhooks secrets and provider keys.
 */
const SECRET_PATTERNS: { hint: RegExp; pattern: RegExp; replacement: string }[] = [
  { hint: /:\/\//, pattern: /([a-z][a-z0-9+.-]*:\/\/[^\s/?#@:"\\]*:)[^\s/?#@"\\]+@/gi, replacement: `$1${REDACTED}@` },
  { hint: /bearer/i, pattern: /\b(Bearer\s+)[^\s"\\,;]+/gi, replacement: `$1${REDACTED}` },
  { hint: /ark_/, pattern: /\b(ark_[A-Za-z0-9_-]{8}_)[A-Za-z0-9_-]+/g, replacement: `$1${REDACTED}` },
  { hint: /whsec_/, pattern: /\bwhsec_[A-Za-z0-9+/=]+/g, replacement: `whsec_${REDACTED}` },
  { hint: /sk-/, pattern: /\bsk-[A-Za-z0-9_-]{12,}/g, replacement: `sk-${REDACTED}` },
  { hint: /AIza/, pattern: /\bAIza[A-Za-z0-9_-]{20,}/g, replacement: `AIza${REDACTED}` },
];

/** The configured secrets a line must never show: provider keys, GIT_TOKEN, the encryption key, Temporal's API key, the database password. */
export function secretsOfConfig(config: Config): string[] {
  const values = [
    config.models.openai.apiKey,
    config.models.anthropic.apiKey,
    config.models.gemini.apiKey,
    config.workspace.gitToken,
    // Each key as the variables may spell it.
    ...(config.secretsKeyring?.keys ?? []).flatMap(({ key }) => [
      key.toString('base64'),
      key.toString('hex'),
      key.toString('hex').toUpperCase(),
    ]),
    config.temporal.connection.apiKey,
  ];
  if (config.database.url) {
    try {
      values.push(decodeURIComponent(new URL(config.database.url).password));
    } catch {
      // not a URL: its password, if any, is masked by the URL pattern
    }
  }
  return values.filter((v): v is string => v !== undefined && v.length >= 6);
}

/** `createLogger` options of an entry point: LOG_FORMAT (else the entry point's default) and the configured secrets. */
export function loggerOptions(config: Config, defaultFormat: LogFormat = 'json'): LoggerOptions {
  return { format: config.logFormat ?? defaultFormat, secretValues: secretsOfConfig(config) };
}

/** Masks secret-named fields below the top level of a line, at any depth (objects logged whole). */
function scrubSecretFields(value: unknown, depth: number): unknown {
  if (depth > 12 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    value.forEach((item, i) => {
      const scrubbed = scrubSecretFields(item, depth + 1);
      if (scrubbed !== item) (copy ??= [...value])[i] = scrubbed;
    });
    return copy ?? value;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return value;
  let copy: Record<string, unknown> | undefined;
  for (const [key, item] of Object.entries(value)) {
    const scrubbed = depth >= 1 && SECRET_FIELD_SET.has(key) ? REDACTED : scrubSecretFields(item, depth + 1);
    if (scrubbed !== item) (copy ??= { ...(value as Record<string, unknown>) })[key] = scrubbed;
  }
  return copy ?? value;
}

/** pino's error serializer (name, message, stack, cause, own fields), then secret-named fields masked. */
function serializeError(value: unknown): unknown {
  return scrubSecretFields(pino.stdSerializers.err(value as Error), 0);
}

function maskLine(line: string, secretValues: string[]): string {
  let out = line;
  for (const secret of secretValues) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  // The cheap test first: most lines hold none of these.
  for (const { hint, pattern, replacement } of SECRET_PATTERNS) {
    if (hint.test(out)) out = out.replace(pattern, replacement);
  }
  return out;
}

/** The value as it appears inside a JSON string, when escaping changes it. */
function jsonEscaped(value: string): string[] {
  const escaped = JSON.stringify(value).slice(1, -1);
  return escaped === value ? [value] : [value, escaped];
}

function prettyStream(destination: DestinationStream | undefined): DestinationStream {
  return pretty({
    destination: destination ?? 2,
    sync: true,
    colorize: destination === undefined && process.stderr.isTTY,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,component',
    messageFormat: '{component}: {msg}',
    errorLikeObjectKeys: ['err', 'error'],
  });
}

/**
 * JSON lines (or readable lines, `format: 'pretty'`) on stderr through pino, `component` on
 * each. Secret fields are masked by pino's `redact`; secrets recognisable by their form or
 * given in `secretValues` are masked wherever they appear.
 */
export function createLogger(level: LogLevel, component: string, options: LoggerOptions = {}): Logger {
  const secretValues = [...new Set((options.secretValues ?? []).flatMap(jsonEscaped))];
  const destination =
    options.format === 'pretty'
      ? prettyStream(options.destination)
      : (options.destination ?? pino.destination({ fd: 2, sync: true }));
  const root = pino(
    {
      level,
      base: { component },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: {
        level: (label) => ({ level: label }),
        log: (fields) => scrubSecretFields(fields, 0) as Record<string, unknown>,
        bindings: (bindings) => scrubSecretFields(bindings, 0) as Record<string, unknown>,
      },
      serializers: { err: serializeError, error: serializeError },
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      hooks: { streamWrite: (line) => maskLine(line, secretValues) },
    },
    destination,
  );
  return wrap(root);
}

function wrap(p: PinoLogger): Logger {
  return {
    debug: (msg, fields) => (fields ? p.debug(fields, msg) : p.debug(msg)),
    info: (msg, fields) => (fields ? p.info(fields, msg) : p.info(msg)),
    warn: (msg, fields) => (fields ? p.warn(fields, msg) : p.warn(msg)),
    error: (msg, fields) => (fields ? p.error(fields, msg) : p.error(msg)),
    child: (bindings) => wrap(p.child(bindings)),
  };
}
