import type { DataSource } from 'typeorm';
import { FACTORIES_DIR, FACTORY_FILE_NAME, MAX_FACTORY_FILE_BYTES } from '../../core/factory-file';
import type { Environment } from '../../db/environment-reads';
import {
  syncFileFactories,
  type FileFactorySyncResult,
  type FoundFactoryFile,
  type SkippedFactoryFile,
} from '../../db/factories';
import type { RunEventPayloads } from '../../core/run-events';
import { appendRunEvent } from '../../db/run-events';
import type { WorkspaceFiles } from '../sandbox/workspace-files';
import { checkUntrustedFactoryFile, type FactoryFileChecks } from '../../services/untrusted-parse/untrusted-parser';
import { discoverFactoryTrees } from './discover-factory-trees';

/** Factory directories read per repository; more is a mistake, not a factory. */
export const MAX_FACTORY_DIRS = 100;

/**
 * Reads and parses every `.agents/factories/<name>/FACTORY.md` of a repository in the workspace,
 * and every factory tree (`factory.yaml` with `agents/<agent>/agent.md`, discover-factory-trees.ts),
 * through the run's sandbox (the bytes are the repository's: untrusted, size-capped, no symlink
 * followed), each in the parse child. `checks` say whose skills this service may load
 * (GIT_ALLOWED_OWNERS) and which models it serves.
 */
export async function discoverFactoryFiles(
  files: WorkspaceFiles,
  repoDir: string,
  repository: string,
  checks: FactoryFileChecks,
): Promise<{ found: FoundFactoryFile[]; skipped: SkippedFactoryFile[] }> {
  const found: FoundFactoryFile[] = [];
  const skipped: SkippedFactoryFile[] = [];
  const entries = await files.filesInSubdirectories(repoDir, FACTORIES_DIR, FACTORY_FILE_NAME, {
    maxBytes: MAX_FACTORY_FILE_BYTES,
    maxEntries: MAX_FACTORY_DIRS,
  });
  const markdownDirs = new Set<string>();
  for (const entry of entries) {
    // Not the entry that says the directories ran past MAX_FACTORY_DIRS: it names one it did not read.
    if (entry.path.endsWith(`/${FACTORY_FILE_NAME}`) && !entry.error?.startsWith('not read:')) {
      markdownDirs.add(entry.path.slice(0, -FACTORY_FILE_NAME.length - 1));
    }
    if (entry.content === undefined) {
      skipped.push({ repository, path: entry.path, errors: [{ path: 'file', message: entry.error ?? 'unreadable' }] });
      continue;
    }
    const checked = await checkUntrustedFactoryFile(entry.content, entry.path, checks);
    if (checked.valid) found.push({ repository, path: entry.path, factory: checked.factory });
    else skipped.push({ repository, path: entry.path, errors: checked.errors });
  }
  const trees = await discoverFactoryTrees(
    files,
    repoDir,
    repository,
    checks.gitAllowedOwners,
    markdownDirs,
    MAX_FACTORY_DIRS,
  );
  return { found: [...found, ...trees.found], skipped: [...skipped, ...trees.skipped] };
}

/**
 * Discovery at provisioning: records the factories of the environment's freshly cloned
 * repositories for the run's team. A file that cannot be recorded is skipped and noted on the
 * run; it never fails the run, and a factory it defined before stays as it was.
 */
export async function recordEnvironmentFactories(input: {
  dataSource: DataSource;
  files: WorkspaceFiles;
  env: Environment;
  /** Whose skills and which models the factories may name. */
  checks: FactoryFileChecks;
  runId: string;
  turn: number;
  /** Tells provisionings of one turn apart in the notices' keys. */
  attemptKey: string;
}): Promise<FileFactorySyncResult> {
  const { dataSource, env, runId, turn, attemptKey } = input;
  const found: FoundFactoryFile[] = [];
  const skipped: SkippedFactoryFile[] = [];
  for (const repo of env.config.github_repos ?? []) {
    const repository = `${repo.owner}/${repo.repo}`;
    const discovered = await discoverFactoryFiles(input.files, repo.repo, repository, input.checks);
    found.push(...discovered.found);
    skipped.push(...discovered.skipped);
  }
  const result = await syncFileFactories(dataSource.manager, {
    teamId: env.teamId,
    environmentId: env.uid,
    found,
    keep: skipped.filter((file) => file.keepRecorded !== false),
  });

  const warnings = [
    ...skipped.map(
      (s) =>
        `Skipped factory file ${s.repository}:${s.path}: ${s.errors.map((e) => `${e.path}: ${e.message}`).join('; ')}. Fix it and commit it; the next run in this environment reads it again.`,
    ),
    ...result.conflicts.map((c) => `Skipped factory file ${c.file}: ${c.message}.`),
  ];
  const notices: RunEventPayloads['notice'][] = warnings.map((message) => ({ message, level: 'warning' }));
  const recorded = result.synced.map(
    (f) => `${f.name} (${f.uid}, ${f.agents} agents, ${f.file}${f.changed ? ', updated' : ''})`,
  );
  const removed = result.removed.map((f) => `${f.name} (${f.uid}, was ${f.file})`);
  if (recorded.length || removed.length) {
    notices.push({
      message: [
        `Factories of environment ${env.config.name} (${env.uid})`,
        recorded.length ? `: ${recorded.join(', ')}` : '',
        removed.length ? `${recorded.length ? '; ' : ': '}removed ${removed.join(', ')}` : '',
        '.',
      ].join(''),
    });
  }
  for (const [index, payload] of notices.entries()) {
    await appendRunEvent(dataSource.manager, {
      runId,
      eventKey: `factories-t${turn}-${attemptKey}-${index}`,
      kind: 'notice',
      turn,
      payload,
    });
  }
  return result;
}
