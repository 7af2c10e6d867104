import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createSandbox } from '../../activities/sandbox/create-sandbox';
import type { Sandbox } from '../../activities/sandbox/sandbox';
import { runProcesses, type RunProcesses } from '../../activities/sandbox/sandboxed-process';
import { loadConfig, type Config } from '../../core/config';
import { createLogger } from '../../core/logger';
import { OutboundAddressRules } from '../../core/outbound-addresses';
import { hostPidsRunning } from './host-processes';
import { waitFor } from './test-context';

/** A worker's sandbox on its own workspace root, without the rest of the worker. */
export async function createTestSandbox(env: Record<string, string> = {}): Promise<{
  sandbox: Sandbox;
  config: Config;
  processes(runId: string): Promise<RunProcesses>;
}> {
  const config = loadConfig({
    AGENT_RUNS_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'agent-runs-sbx-data-')),
    AGENT_RUNS_WORKSPACE_DIR: mkdtempSync(path.join(os.tmpdir(), 'agent-runs-sbx-')),
    LOG_LEVEL: 'error',
    ...env,
  });
  const rules = new OutboundAddressRules(config.network.sandboxAllowedPrivateHosts);
  const sandbox = await createSandbox(config, rules, createLogger('error', 'test'));
  return {
    sandbox,
    config,
    async processes(runId) {
      await sandbox.prepareRun(runId);
      return runProcesses(sandbox, runId);
    },
  };
}

/** A run's command that sleeps under the name `marker` until killed, and its host pid once it runs. */
export async function sleepingCommand(processes: RunProcesses, marker: string, policy: 'open' | 'none') {
  const command = processes.runCommand({
    command: `exec -a ${marker} sleep 600`,
    policy,
    timeoutMs: 120_000,
    keepBytes: 4096,
  });
  const [pid] = await waitFor(
    async () => hostPidsRunning(marker),
    (pids) => pids.length === 1,
    `${marker} to run`,
  );
  return { pid: pid!, command };
}
