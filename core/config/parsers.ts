import ipaddr from 'ipaddr.js';
import { z } from 'zod';
import { BUILT_IN_FORGES, FORGE_KINDS, type ForgeKind } from '../git-forges';
import { parseNetworkPolicyText, type NetworkPolicy } from '../network-policy';

/** A configuration the service cannot start with; the message names each variable and its problem. */
export class ConfigError extends Error {}

/** Prices of well-known models (USD per million tokens); MODEL_PRICES adds to or overrides them. */
export const DEFAULT_PRICES: Record<string, { input: number; output: number }> = {
  'openai/gpt-4o': { input: 2.5, output: 10 },
  'openai/gpt-4o-mini': { input: 0.15, output: 0.6 },
  'openai/gpt-4.1': { input: 2, output: 8 },
  'openai/gpt-4.1-mini': { input: 0.4, output: 1.6 },
  'anthropic/claude-sonnet-4-5': { input: 3, output: 15 },
  'anthropic/claude-haiku-4-5': { input: 1, output: 5 },
};

/** Context windows of well-known models, in tokens; MODEL_CONTEXT_TOKENS adds to or overrides them. */
export const DEFAULT_CONTEXT_TOKENS: Record<string, number> = {
  'openai/gpt-4o': 128_000,
  'openai/gpt-4o-mini': 128_000,
  'openai/gpt-4.1': 1_000_000,
  'openai/gpt-4.1-mini': 1_000_000,
  'anthropic/claude-sonnet-4-5': 200_000,
  'anthropic/claude-haiku-4-5': 200_000,
};

/** A JSON object keyed by model id from a variable, merged over built-in values. */
export function parseModelMap<T>(
  name: string,
  raw: string | undefined,
  value: z.ZodType<T>,
  defaults: Record<string, T>,
  example: string,
): Record<string, T> {
  if (raw === undefined) return defaults;
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new ConfigError(`Invalid configuration:\n  ${name}: must be JSON like ${example}`);
  }
  const parsed = z.record(z.string(), value).safeParse(json);
  if (!parsed.success) {
    throw new ConfigError(
      `Invalid configuration:\n  ${name}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  }
  return { ...defaults, ...parsed.data };
}

export const commaList = (raw: string | undefined): string[] =>
  (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/**
 * EGRESS_CIDRS: networks in canonical form (the network address of a CIDR, IPv6 compressed as
 * RFC 5952 writes it; a single address as /32 or /128), without duplicates, in the order given.
 */
export function parseEgressCidrs(raw: string | undefined): string[] {
  const cidrs = commaList(raw).map((entry) => {
    const withPrefix = entry.includes('/') ? entry : `${entry}/${ipaddr.IPv6.isValid(entry) ? 128 : 32}`;
    if (ipaddr.IPv4.isValidCIDRFourPartDecimal(withPrefix)) {
      return `${ipaddr.IPv4.networkAddressFromCIDR(withPrefix).toString()}/${ipaddr.IPv4.parseCIDR(withPrefix)[1]}`;
    }
    if (!withPrefix.includes('.') && ipaddr.IPv6.isValidCIDR(withPrefix)) {
      return `${ipaddr.IPv6.networkAddressFromCIDR(withPrefix).toString()}/${ipaddr.IPv6.parseCIDR(withPrefix)[1]}`;
    }
    throw new ConfigError(
      `Invalid configuration:\n  EGRESS_CIDRS: \`${entry}\` is not an IPv4 or IPv6 network; write networks like 203.0.113.0/24 or 2001:db8::/48, separated by commas`,
    );
  });
  return [...new Set(cidrs)];
}

/** `key=value,key2=value2` as OpenTelemetry's OTEL_EXPORTER_OTLP_HEADERS spells it (values URL-encoded). */
export function parseOtlpHeaders(name: string, raw: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of commaList(raw)) {
    const eq = pair.indexOf('=');
    const key = pair.slice(0, eq).trim();
    let value: string;
    try {
      value = decodeURIComponent(pair.slice(eq + 1).trim());
    } catch {
      value = '';
    }
    if (eq <= 0 || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(key) || value === '' || /[\r\n]/.test(value)) {
      throw new ConfigError(
        `Invalid configuration:\n  ${name}: must be comma-separated key=value pairs, like api-key=abc123,tenant=ops`,
      );
    }
    headers[key.toLowerCase()] = value;
  }
  return headers;
}

export function parseNetworkPolicy(raw: string): NetworkPolicy {
  const parsed = parseNetworkPolicyText(raw);
  if (typeof parsed === 'string' && parsed.startsWith('!')) {
    throw new ConfigError(`Invalid configuration:\n  AGENT_NETWORK_DEFAULT: ${parsed.slice(1)}`);
  }
  return parsed as NetworkPolicy;
}

/** IMAGE_ALLOWED_REGISTRIES, IMAGE_INSECURE_REGISTRIES: registry hosts, each `host` or `host:port`, in lower case. */
export function parseRegistries(raw: string | undefined, variable: string): string[] {
  return commaList(raw).map((entry) => {
    if (!/^[A-Za-z0-9.-]+(?::[0-9]{1,5})?$/.test(entry) || entry.includes('..')) {
      throw new ConfigError(
        `Invalid configuration:\n  ${variable}: \`${entry}\` is not a registry host; write hosts with their port where there is one, like ghcr.io,registry.internal:5000, separated by commas`,
      );
    }
    return entry.toLowerCase();
  });
}

/** GIT_FORGES: `host=kind` pairs (host with its port where there is one) over the built-in hosts, hosts in lower case. */
export function parseGitForges(raw: string | undefined): Record<string, ForgeKind> {
  const forges: Record<string, ForgeKind> = { ...BUILT_IN_FORGES };
  for (const pair of commaList(raw)) {
    const [host = '', kind = '', ...rest] = pair.split('=').map((s) => s.trim());
    const validHost = /^[A-Za-z0-9.-]+(?::[0-9]{1,5})?$/.test(host) && !host.includes('..');
    if (!validHost || rest.length > 0 || !(FORGE_KINDS as readonly string[]).includes(kind.toLowerCase())) {
      throw new ConfigError(
        `Invalid configuration:\n  GIT_FORGES: \`${pair}\` is not host=kind; write pairs like git.example.com=gitea,ghe.example.com=github, kind one of ${FORGE_KINDS.join(', ')} (Forgejo is gitea), separated by commas`,
      );
    }
    forges[host.toLowerCase()] = kind.toLowerCase() as ForgeKind;
  }
  return forges;
}

/** FORGE_WEBHOOK_SECRETS: `host=secret` pairs, hosts in lower case; a secret may hold `=` (base64), not a comma. */
export function parseForgeWebhookSecrets(raw: string | undefined): Record<string, string> {
  const secrets: Record<string, string> = {};
  for (const pair of commaList(raw)) {
    const at = pair.indexOf('=');
    const host = pair.slice(0, Math.max(at, 0)).trim().toLowerCase();
    const secret = pair.slice(at + 1).trim();
    const validHost = /^[a-z0-9.-]+(?::[0-9]{1,5})?$/.test(host) && !host.includes('..');
    if (at < 0 || !validHost || secret.length < 16 || Object.hasOwn(secrets, host)) {
      throw new ConfigError(
        `Invalid configuration:\n  FORGE_WEBHOOK_SECRETS: a pair is not host=secret (host once, secret of at least 16 characters); write pairs like git.example.com=<secret>,github.com=<secret>, separated by commas`,
      );
    }
    secrets[host] = secret;
  }
  return secrets;
}
