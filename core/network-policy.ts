import { z } from 'zod';

/**
 * What a sandbox may reach through the egress proxy: nothing, any public address, or public
 * addresses of the listed domains. Private, loopback, link-local and the platform's own addresses
 * are refused whatever the policy.
 */
export type NetworkPolicy = 'open' | 'none' | { allowed_domains: string[] };

const DOMAIN_RE =
  /^(\*\.)?(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;
const DOMAIN_RULE = 'a domain like `github.com`, or `*.npmjs.org` for its subdomains';

/** JavaScript's white space (what `trim()` takes), spelled out so other regex engines read it the same. */
const SPACE = '[\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]';
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';

/**
 * An allowed domain as sent, for the OpenAPI document and checked here too: labels, the last one
 * starting with a letter (so no IP address), in any case, with surrounding space and a final dot
 * (both dropped). At most MAX_ALLOWED_DOMAIN_CHARS characters.
 */
export const ALLOWED_DOMAIN_PATTERN = `^${SPACE}*(?:\\*\\.)?(?:${LABEL}\\.)*[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.?${SPACE}*$`;
export const MAX_ALLOWED_DOMAIN_CHARS = 253;
const ALLOWED_DOMAIN_RE = new RegExp(ALLOWED_DOMAIN_PATTERN);

export const allowedDomainSchema = z
  .string()
  .refine((d) => d.length <= MAX_ALLOWED_DOMAIN_CHARS && ALLOWED_DOMAIN_RE.test(d), `must be ${DOMAIN_RULE}`)
  .transform((d) => d.trim().toLowerCase().replace(/\.$/, ''))
  .refine((d) => DOMAIN_RE.test(d) && !/^[0-9.]+$/.test(d), `must be ${DOMAIN_RULE}`);

/** `config.network` of an environment. */
export const networkPolicySchema = z.union([
  z.enum(['open', 'none']),
  z.strictObject({ allowed_domains: z.array(allowedDomainSchema).min(1).max(200) }),
]);

/**
 * Parses the text form of a policy (`open`, `none`, or a comma list of domains). Returns the
 * policy, or a string starting with `!` that says what is wrong.
 */
export function parseNetworkPolicyText(raw: string): NetworkPolicy | `!${string}` {
  const text = raw.trim().toLowerCase();
  if (text === 'open' || text === 'none') return text;
  const domains = text
    .split(',')
    .map((d) => d.trim())
    .filter(Boolean);
  const bad = domains.filter((d) => !allowedDomainSchema.safeParse(d).success);
  if (!domains.length || bad.length) {
    return `!must be \`open\`, \`none\` or a comma list of domains (each ${DOMAIN_RULE}); bad: ${bad.join(', ') || '(empty)'}`;
  }
  return { allowed_domains: domains.map((d) => allowedDomainSchema.parse(d)) };
}

/** Whether a host name is allowed by a policy's domain rules (addresses are checked elsewhere). */
export function policyAllowsHost(policy: NetworkPolicy, host: string): boolean {
  if (policy === 'open') return true;
  if (policy === 'none') return false;
  const name = host.toLowerCase().replace(/\.$/, '');
  return policy.allowed_domains.some((rule) =>
    rule.startsWith('*.') ? name.endsWith(rule.slice(1)) && name.length > rule.length - 1 : name === rule,
  );
}

export function describePolicy(policy: NetworkPolicy): string {
  if (policy === 'open') return 'open (public addresses only)';
  if (policy === 'none') return 'none';
  return `allow-list: ${policy.allowed_domains.join(', ')}`;
}
