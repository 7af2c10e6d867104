import type { Config } from './config';
import { endpointOf, type Endpoint } from './outbound-addresses';

/**
 * The platform's own services, which no outbound connection made for a caller may reach: the
 * database and Temporal (`given`, as URL or `host:port`; by default those of the configuration)
 * and this service's API.
 */
export function platformEndpoints(config: Config, given?: string[]): Endpoint[] {
  const services = given ?? [
    config.database.url ?? `postgres://127.0.0.1:${config.database.embeddedPort}`,
    config.temporal.address ?? `127.0.0.1:${config.temporal.devPort}`,
  ];
  const endpoints = services.map((e) => endpointOf(e, e.startsWith('postgres') ? 5432 : 7233));
  endpoints.push(endpointOf(config.publicUrl, config.publicUrl.startsWith('https:') ? 443 : 80));
  endpoints.push({ host: config.host === '0.0.0.0' ? '127.0.0.1' : config.host, port: config.port });
  return endpoints.filter((e): e is Endpoint => e !== undefined);
}
