import { rm } from 'node:fs/promises';
import type { Sandbox } from '../sandbox/sandbox';
import type { McpSessionCache } from '../tools/mcp-sessions';
import {
  baseCommitsFile,
  harnessOutputDir,
  legacyHarnessOutputDir,
  provisionedMarker,
  workspaceIdFile,
} from './workspace-paths';

/** Removes a run's workspace from this worker: its MCP servers and processes first, then its files and records. */
export async function removeRunWorkspace(
  deps: { root: string; sandbox: Sandbox; mcpSessions: McpSessionCache },
  runId: string,
): Promise<void> {
  await deps.mcpSessions.close(runId);
  // First: the sweeper finds a run by its workspace, which goes with destroyRun. (A CLI still
  // running writes on to its file, unlinked, until destroyRun ends it.)
  await rm(harnessOutputDir(deps.root, runId), { recursive: true, force: true });
  await rm(legacyHarnessOutputDir(deps.root, runId), { recursive: true, force: true });
  await deps.sandbox.destroyRun(runId);
  await rm(provisionedMarker(deps.root, runId), { force: true });
  await rm(workspaceIdFile(deps.root, runId), { force: true });
  await rm(baseCommitsFile(deps.root, runId), { force: true });
}
