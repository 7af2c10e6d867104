import type { OutboundAddressRules } from '../../core/outbound-addresses';
import { invalid } from '../../core/api-error';

/**
 * Checks a webhook URL as MCP URLs are checked when connected to: http(s) only, and a host that
 * resolves to an address outbound connections may use (public, or listed by the operator in
 * OUTBOUND_ALLOWED_PRIVATE_HOSTS; never the platform's own services). Returns the URL in its
 * normal form. Every delivery checks again at connect time (a name may resolve elsewhere later).
 */
export async function checkWebhookUrl(raw: string, rules: OutboundAddressRules): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid('`url` must be an absolute http or https URL, e.g. https://hooks.example.com/agent-runs.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw invalid(`\`url\` must be an http or https URL (got ${url.protocol.slice(0, -1)}).`);
  }
  if (url.username || url.password) {
    throw invalid('`url` may not carry a user name or password; verify deliveries by their signature instead.');
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  const verdict = await rules.resolve(host, port);
  if (!verdict.allowed) {
    throw invalid(
      `\`url\` is refused: ${verdict.reason}. Webhooks go to public addresses only; an operator can open ` +
        'in-house hosts with OUTBOUND_ALLOWED_PRIVATE_HOSTS.',
    );
  }
  return url.href;
}
