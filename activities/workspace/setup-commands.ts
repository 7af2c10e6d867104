import { markEnvironmentSetupFailed } from '../../db/environments';
import { type Environment } from '../../db/environment-reads';
import { appendRunEvent } from '../../db/run-events';
import type { ActivityDeps } from '../deps';
import { networkRefusalNotes } from '../sandbox/network-notes';
import { exceeded as diskExceeded, runDiskQuota } from '../sandbox/run-disk';
import { runNetworkPolicy } from '../sandbox/run-network-policy';
import { runProcesses } from '../sandbox/sandboxed-process';
import { diskLimitFailure, userFailure } from '../user-failure';
import { scrubSecret } from './git';
import type { WorkspaceContext } from './workspace-context';

const SETUP_OUTPUT_TAIL = 2000;

export function createRunSetupCommands(
  { dataSource, config, sandbox }: ActivityDeps,
  { auth }: Pick<WorkspaceContext, 'auth'>,
) {
  return runSetupCommands;

  /** `attemptKey` tells provisionings of one turn apart, so a re-provision's output is kept too. */
  async function runSetupCommands(
    runId: string,
    turn: number,
    attemptKey: string,
    env: Environment,
    dir: string,
    signal: AbortSignal,
  ) {
    const commands = env.config.setup_commands ?? [];
    const policy = runNetworkPolicy(config, env);
    const disk = runDiskQuota(sandbox, runId, config.sandbox.workspaceMaxBytes);
    for (const [index, command] of commands.entries()) {
      const result = await runProcesses(sandbox, runId).runCommand({
        command,
        policy,
        timeoutMs: config.workspace.setupCommandTimeoutSeconds * 1000,
        signal,
        keepBytes: 256 * 1024,
        disk,
      });
      if (result.diskLimitExceeded !== undefined) {
        const err = diskExceeded(result.diskLimitExceeded, disk.maxBytes);
        throw diskLimitFailure(`Setup command ${index + 1} of environment ${env.uid} (\`${command}\`): ${err.message}`);
      }
      if (result.cancelled) throw new Error('setup cancelled');
      const output = scrubSecret(result.output, auth.token) + networkRefusalNotes(result.refusals);
      await dataSource.transaction((tx) =>
        appendRunEvent(tx, {
          runId,
          eventKey: `setup-t${turn}-${attemptKey}-${index}`,
          kind: 'command',
          turn,
          payload: {
            phase: 'setup',
            command,
            exit_code: result.exitCode,
            duration_ms: result.durationMs,
            output,
            timed_out: result.timedOut,
            ...(result.refusals.length ? { network_refusals: result.refusals } : {}),
          },
        }),
      );
      if (result.timedOut || result.exitCode !== 0) {
        await markEnvironmentSetupFailed(dataSource.manager, env.uid, true);
        const why = result.timedOut
          ? `timed out after ${config.workspace.setupCommandTimeoutSeconds}s`
          : `exited with ${result.exitCode ?? result.signal}`;
        throw userFailure(
          `Setup command ${index + 1} of environment ${env.uid} (\`${command}\`) ${why}. Output ends with:\n${output.slice(-SETUP_OUTPUT_TAIL)}`,
          'environment_setup_failed',
        );
      }
    }
    await markEnvironmentSetupFailed(dataSource.manager, env.uid, false);
  }
}
