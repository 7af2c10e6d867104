import type { ResolvedAgentConfig } from '../core/run-types';
import { appendRunEvent } from '../db/run-events';
import type { ActivityDeps } from './deps';

/**
 * Provisioning and resolution steps of a run. This version validates and records what the run
 * asked for; cloning repositories, loading skills and connecting MCP servers come later.
 */
export function createEnvironmentActivities({ dataSource }: ActivityDeps) {
  async function loadConfig(runId: string): Promise<ResolvedAgentConfig> {
    const rows = (await dataSource.query(`SELECT config FROM runs WHERE run_id = $1`, [runId])) as {
      config: ResolvedAgentConfig;
    }[];
    return rows[0]!.config;
  }

  return {
    async provisionEnvironment({ runId, turn }: { runId: string; turn: number }): Promise<void> {
      const config = await loadConfig(runId);
      const message = config.environment_id
        ? `Environment ${config.environment_id} recorded for this run.`
        : 'No environment requested: the agent works without repositories.';
      await dataSource.transaction((tx) =>
        appendRunEvent(tx, { runId, eventKey: `env-t${turn}`, kind: 'notice', turn, payload: { message } }),
      );
    },

    async resolveSkillsAndMcpServers({ runId, turn }: { runId: string; turn: number }): Promise<void> {
      const config = await loadConfig(runId);
      await dataSource.transaction((tx) =>
        appendRunEvent(tx, {
          runId,
          eventKey: `config-t${turn}`,
          kind: 'config',
          turn,
          payload: {
            model_id: config.model_id,
            environment_id: config.environment_id,
            skill_spec: config.skill_spec,
            mcp_servers: config.mcp_servers ? Object.keys(config.mcp_servers) : undefined,
          },
        }),
      );
    },
  };
}
