import type { EntityManager } from 'typeorm';
import type { Config } from '../../core/config';
import type { NetworkPolicy } from '../../core/network-policy';
import { findEnvironment, type Environment } from '../../db/environment-reads';

/** The network policy of a run: its environment's `config.network`, else AGENT_NETWORK_DEFAULT. */
export function runNetworkPolicy(config: Config, environment: Environment | null | undefined): NetworkPolicy {
  return environment?.config.network ?? config.network.defaultPolicy;
}

/** The same, looked up from the run's environment id. */
export async function loadRunNetworkPolicy(
  manager: EntityManager,
  config: Config,
  run: { environmentId?: string; teamId: string },
): Promise<NetworkPolicy> {
  const environment = run.environmentId ? await findEnvironment(manager, run.environmentId, run.teamId) : null;
  return runNetworkPolicy(config, environment);
}
