import { createHmac } from 'node:crypto';
import type { McpServerConfig, ResolvedAgentConfig } from './run-types';
import { decryptSecret, REDACTED, redactMcpServers, SecretDecryptionError } from './secrets';
import type { SecretsKeyring } from './secrets-keyring';
import type { CreateRunRequest } from './schemas/run-schemas';

/**
 * Credential values shorter than this are not masked inside free text (transcripts, status
 * messages): values like `1` or `warn` are no credentials, and masking them would garble the text.
 */
const MIN_MASKED_CHARS = 6;

function eachSecretValue(servers: Record<string, McpServerConfig> | undefined): string[] {
  return Object.values(servers ?? {}).flatMap((s) => [
    ...Object.values(s.env ?? {}),
    ...Object.values(s.headers ?? {}),
  ]);
}

/** A run's config as every response shows it: each MCP `env` and `headers` value is `"***"`. */
export function redactRunConfig(config: ResolvedAgentConfig): ResolvedAgentConfig {
  return config.mcp_servers ? { ...config, mcp_servers: redactMcpServers(config.mcp_servers) } : config;
}

/**
 * The run's credential values in clear, to mask wherever a worker may have let one through
 * (an MCP server that echoes its token in an error, a tool result). Also the token alone of
 * an `Authorization: Bearer <token>`-style value, since that is what usually gets echoed.
 */
export function runSecretValues(config: ResolvedAgentConfig, ring: SecretsKeyring): string[] {
  const values = new Set<string>();
  for (const stored of eachSecretValue(config.mcp_servers)) {
    let value: string;
    try {
      value = decryptSecret(stored, ring);
    } catch (err) {
      // A value altered since it was stored: no worker could have used it either, so nothing shows it.
      // One under a key since removed may have been used: masking nothing then would show it.
      if (err instanceof SecretDecryptionError && err.failure === 'altered') continue;
      throw err;
    }
    values.add(value);
    const token = /^[A-Za-z]+ +(\S+)$/.exec(value)?.[1];
    if (token) values.add(token);
  }
  // Longest first, so a value that contains another is masked whole.
  return [...values].filter((v) => v.length >= MIN_MASKED_CHARS).sort((a, b) => b.length - a.length);
}

/** `value` with every occurrence of a secret in its strings replaced by `"***"`; Dates and other objects kept. */
export function maskSecrets<T>(value: T, secrets: readonly string[]): T {
  if (secrets.length === 0) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return secrets.reduce((text, secret) => text.split(secret).join(REDACTED), v);
    if (Array.isArray(v)) return v.map(walk);
    // Plain objects only: a Date (an event's createdAt) is kept as it is.
    if (v !== null && typeof v === 'object' && [Object.prototype, null].includes(Object.getPrototypeOf(v))) {
      return Object.fromEntries(Object.entries(v).map(([k, child]) => [k, walk(child)]));
    }
    return v;
  };
  return walk(value) as T;
}

/**
 * The create body as its idempotency hash sees it, under each key of the ring, newest first
 * (a retry that straddles a rotation still matches the hash its first request recorded).
 */
export function idempotencyViews(body: CreateRunRequest, ring: SecretsKeyring): CreateRunRequest[] {
  return ring.keys.map(({ key }) => idempotencyView(body, key));
}

/**
 * The create body as its idempotency hash sees it: credential values replaced by a keyed
 * HMAC, so the stored hash is no offline oracle for guessing a weak credential.
 */
export function idempotencyView(body: CreateRunRequest, key: Buffer): CreateRunRequest {
  const servers = body.config?.mcp_servers;
  if (!servers || !body.config) return body;
  const mac = (value: string) => `hmac:${createHmac('sha256', key).update(value).digest('hex')}`;
  const macAll = (values: Record<string, string>) =>
    Object.fromEntries(Object.entries(values).map(([k, v]) => [k, mac(v)]));
  const mcp_servers = Object.fromEntries(
    Object.entries(servers).map(([name, server]) => [
      name,
      {
        ...server,
        ...(server.env ? { env: macAll(server.env) } : {}),
        ...(server.headers ? { headers: macAll(server.headers) } : {}),
      },
    ]),
  );
  return { ...body, config: { ...body.config, mcp_servers } };
}
