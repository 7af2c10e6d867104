import { FACTORIES_DIR, MAX_FACTORY_AGENTS, MAX_FACTORY_FILE_BYTES } from '../../core/factory-file';
import { AGENT_FILE, FACTORY_YAML } from '../../core/factory-tree/tree-files';
import { diagnosticPlace } from '../../core/factory-tree/diagnostics';
import type { TreeFile } from '../../core/factory-tree/validate-tree';
import type { FoundFactoryFile, SkippedFactoryFile } from '../../db/factories';
import { validateUntrustedTree } from '../../services/untrusted-parse/untrusted-parser';
import type { WorkspaceFiles } from '../sandbox/workspace-files';

/**
 * Reads every factory tree of a repository in the workspace: `.agents/factories/<name>/factory.yaml`
 * and the `agents/<agent>/agent.md` beside it, through the run's sandbox (untrusted bytes,
 * size-capped, no symlink followed), and validates it as `POST /factory-files/validate` does.
 * A directory that also holds a FACTORY.md (`markdownDirs`) is skipped: one format per factory.
 */
export async function discoverFactoryTrees(
  files: WorkspaceFiles,
  repoDir: string,
  repository: string,
  gitAllowedOwners: readonly string[] | undefined,
  markdownDirs: ReadonlySet<string>,
  maxDirs: number,
): Promise<{ found: FoundFactoryFile[]; skipped: SkippedFactoryFile[] }> {
  const found: FoundFactoryFile[] = [];
  const skipped: SkippedFactoryFile[] = [];
  const skip = (path: string, message: string, keep?: { keepRecorded: false }) =>
    skipped.push({ repository, path, errors: [{ path: 'file', message }], ...keep });
  const roots = await files.filesInSubdirectories(repoDir, FACTORIES_DIR, FACTORY_YAML, {
    maxBytes: MAX_FACTORY_FILE_BYTES,
    maxEntries: maxDirs,
  });
  // A symlinked directory was reported by the FACTORY.md pass already.
  for (const root of roots.filter((entry) => entry.path.endsWith(`/${FACTORY_YAML}`))) {
    const dir = root.path.slice(0, -FACTORY_YAML.length - 1);
    if (root.content === undefined) {
      skip(root.path, root.error ?? 'unreadable');
      continue;
    }
    if (markdownDirs.has(dir)) {
      skip(
        root.path,
        `${dir} holds a FACTORY.md too, which is the one recorded; a factory directory holds one format, so remove one of them`,
        { keepRecorded: false },
      );
      continue;
    }
    const agentEntries = await files.filesInSubdirectories(repoDir, `${dir}/agents`, AGENT_FILE, {
      maxBytes: MAX_FACTORY_FILE_BYTES,
      maxEntries: MAX_FACTORY_AGENTS + 1,
    });
    // Skipped as the tree (its factory.yaml), so that what the tree recorded before stays.
    const unreadable = agentEntries.find((entry) => entry.content === undefined);
    if (unreadable) {
      skip(root.path, `${unreadable.path} ${unreadable.error ?? 'is unreadable'}`);
      continue;
    }
    const tree: TreeFile[] = [{ path: root.path, content: root.content }];
    for (const entry of agentEntries) tree.push({ path: entry.path, content: entry.content! });
    const { validation, factory } = await validateUntrustedTree(tree, gitAllowedOwners);
    if (factory) {
      found.push({ repository, path: root.path, factory });
      continue;
    }
    skipped.push({
      repository,
      path: root.path,
      errors: validation.diagnostics.map((d) => ({ path: diagnosticPlace(d), message: `${d.message} (${d.code})` })),
    });
  }
  return { found, skipped };
}
