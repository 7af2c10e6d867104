import { isIP } from 'node:net';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { observeRefusal } from '../../core/metrics';
import type { OutboundAddressRules } from '../../core/outbound-addresses';

export class OutboundRefusedError extends Error {
  override name = 'OutboundRefusedError';
}

/**
 * A fetch whose every connection (redirects included) is checked at connect time against the
 * outbound address rules, on the address it then connects to: names are resolved once, here.
 */
export function guardedFetch(rules: OutboundAddressRules): typeof globalThis.fetch {
  const connect = buildConnector({});
  const agent = new Agent({
    connect: (options, callback) => {
      const host = options.hostname.replace(/^\[|\]$/g, '');
      const port = Number(options.port) || (options.protocol === 'https:' ? 443 : 80);
      rules.resolve(host, port).then(
        (verdict) => {
          if (!verdict.allowed) {
            observeRefusal(verdict.kind, 'worker');
            callback(new OutboundRefusedError(`connection refused: ${verdict.reason}`), null);
            return;
          }
          connect(
            {
              ...options,
              hostname: verdict.address,
              servername: options.servername ?? (isIP(host) ? undefined : host),
            },
            callback,
          );
        },
        (err: Error) => callback(err, null),
      );
    },
  });
  return ((input: Parameters<typeof globalThis.fetch>[0], init?: RequestInit) =>
    undiciFetch(input as Parameters<typeof undiciFetch>[0], {
      ...(init as Parameters<typeof undiciFetch>[1]),
      dispatcher: agent,
    })) as unknown as typeof globalThis.fetch;
}
