import { forkLauncher, type LaunchedProcess, type LaunchOptions } from './launched-process';
import type { PreparedProcess } from './sandbox';

/**
 * Starts a prepared process the cheapest way its sandbox offers: from the run's own spawn server
 * when it has one (`inRun`), else through its launcher, else as a fork of the worker.
 */
export function startPrepared(prepared: PreparedProcess, options: Omit<LaunchOptions, 'cwd' | 'env'>): LaunchedProcess {
  const own = { cwd: prepared.cwd, env: prepared.env, ...options };
  if (prepared.inRun?.launch) return prepared.inRun.launch(prepared.inRun.file, prepared.inRun.args, own);
  return (prepared.launch ?? forkLauncher)(prepared.file, prepared.args, own);
}
