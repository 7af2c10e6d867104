import { SLUG_RE } from '../factory-file-format';
import { DIAGNOSTIC_CODES, diagnosticsOf, type Diagnostic } from './diagnostics';

export const FACTORY_YAML = 'factory.yaml';
export const AGENT_FILE = 'agent.md';
/** A tree's `factory.yaml` where discovery finds it in a repository: `.agents/factories/<dir>/factory.yaml`. */
export const FACTORY_TREE_PATH_RE = /^\.agents\/factories\/([^/]+)\/factory\.yaml$/;

/** One file of a factory tree as a caller sends it. */
export interface TreeFile {
  path: string;
  content: string;
}

export interface SortedTree {
  factoryFile?: TreeFile;
  /** Agent name (its directory's) → its `agent.md`. */
  agentFiles: Map<string, TreeFile>;
}

/**
 * Sorts the files into the factory's `factory.yaml` and its `agents/<name>/agent.md` (the tree
 * may sit in a directory of the repository: the agents are beside its factory.yaml), reporting
 * paths that are malformed, repeated, or no part of the format.
 */
export function sortTreeFiles(files: readonly TreeFile[], diagnostics: Diagnostic[]): SortedTree {
  const seen = new Set<string>();
  const wellFormed: TreeFile[] = [];
  for (const file of files) {
    const report = diagnosticsOf(file.path, diagnostics);
    if (!isRelativePath(file.path)) {
      report(
        DIAGNOSTIC_CODES.invalidPath,
        'must be a path relative to the repository, with `/` between non-empty parts and no `.` or `..` parts (e.g. `agents/triage/agent.md`)',
      );
    } else if (seen.has(file.path)) {
      report(DIAGNOSTIC_CODES.duplicatePath, 'is sent more than once; send each file once');
    } else {
      seen.add(file.path);
      wellFormed.push(file);
    }
  }

  const factoryFiles = wellFormed.filter((file) => baseName(file.path) === FACTORY_YAML);
  const tree: SortedTree = { agentFiles: new Map() };
  if (factoryFiles.length === 0) {
    diagnosticsOf(FACTORY_YAML, diagnostics)(
      DIAGNOSTIC_CODES.missingFactoryFile,
      `no ${FACTORY_YAML} was sent; a factory tree is a ${FACTORY_YAML} with name and description, and agents/<name>/${AGENT_FILE} beside it`,
    );
    return tree;
  }
  if (factoryFiles.length > 1) {
    for (const extra of factoryFiles.slice(1)) {
      diagnosticsOf(extra.path, diagnostics)(
        DIAGNOSTIC_CODES.multipleFactoryFiles,
        `a request validates one factory; ${factoryFiles[0]!.path} came first (send each factory's tree on its own)`,
      );
    }
  }
  tree.factoryFile = factoryFiles[0]!;
  const root = tree.factoryFile.path.slice(0, -FACTORY_YAML.length);
  for (const file of wellFormed) {
    if (factoryFiles.includes(file)) continue;
    const report = diagnosticsOf(file.path, diagnostics);
    const rest = file.path.startsWith(root) ? file.path.slice(root.length) : undefined;
    const agent = rest === undefined ? undefined : /^agents\/([^/]+)\/agent\.md$/.exec(rest)?.[1];
    if (agent === undefined) {
      report(
        DIAGNOSTIC_CODES.unknownFile,
        `is not a file of this factory: its files are ${root}${FACTORY_YAML} and ${root}agents/<name>/${AGENT_FILE} (skill files are not validated here)`,
      );
    } else if (!SLUG_RE.test(agent) || agent.length > 64) {
      report(
        DIAGNOSTIC_CODES.invalidAgentName,
        `the agent's name is its directory's, "${agent}": lowercase letters, digits and single hyphens, at most 64 characters (rename the directory)`,
      );
    } else {
      tree.agentFiles.set(agent, file);
    }
  }
  return tree;
}

function isRelativePath(path: string): boolean {
  if (path.length === 0 || path.length > 1024 || /[\\\0]/.test(path)) return false;
  return path.split('/').every((part) => part !== '' && part !== '.' && part !== '..');
}

function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}
