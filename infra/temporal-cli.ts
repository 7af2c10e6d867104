import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

export const TEMPORAL_CLI_VERSION = 'v1.5.1';
const CLI_MODULE = `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`;

export type TemporalCliSource =
  | { kind: 'path'; path: string; origin: 'TEMPORAL_CLI_PATH' | 'PATH' | 'cache' | 'go install' }
  | { kind: 'sdk-download'; downloadDir: string };

/** Cache for a built CLI, outside the repository so every checkout shares it. */
export function temporalCliCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'agent-runs', 'temporal-cli', TEMPORAL_CLI_VERSION);
}

function onPath(binary: string): string | undefined {
  const result = spawnSync('sh', ['-c', `command -v ${binary}`], { encoding: 'utf8' });
  const found = result.stdout.trim();
  return result.status === 0 && found ? found : undefined;
}

/**
 * Finds the `temporal` CLI: TEMPORAL_CLI_PATH, then PATH, then a cached build, then a build with
 * `go install` when Go is present, and as a last resort the Temporal SDK's own download.
 */
export async function locateTemporalCli(options: {
  cliPath?: string;
  say: (message: string) => void;
  env?: NodeJS.ProcessEnv;
}): Promise<TemporalCliSource> {
  const env = options.env ?? process.env;
  if (options.cliPath) {
    if (!existsSync(options.cliPath)) {
      throw new Error(`TEMPORAL_CLI_PATH points to ${options.cliPath}, which does not exist.`);
    }
    return { kind: 'path', path: options.cliPath, origin: 'TEMPORAL_CLI_PATH' };
  }
  const fromPath = onPath('temporal');
  if (fromPath) return { kind: 'path', path: fromPath, origin: 'PATH' };

  const cacheDir = temporalCliCacheDir(env);
  const cached = path.join(cacheDir, 'temporal');
  if (existsSync(cached)) return { kind: 'path', path: cached, origin: 'cache' };

  const go = onPath('go');
  if (go) {
    options.say(
      `Building the Temporal CLI ${TEMPORAL_CLI_VERSION} with Go into ${cacheDir} (first time only; this takes a few minutes)...`,
    );
    mkdirSync(cacheDir, { recursive: true });
    const started = Date.now();
    try {
      await execFileAsync(go, ['install', CLI_MODULE], {
        env: { ...env, GOBIN: cacheDir, GOFLAGS: '-mod=mod' },
        maxBuffer: 64 * 1024 * 1024,
      });
    } catch (err) {
      const stderr = (err as { stderr?: string }).stderr ?? String(err);
      throw new Error(`go install ${CLI_MODULE} failed:\n${stderr.trim()}`);
    }
    options.say(`Temporal CLI built in ${Math.round((Date.now() - started) / 1000)}s.`);
    return { kind: 'path', path: cached, origin: 'go install' };
  }

  options.say('No temporal CLI found and Go is not installed: letting the Temporal SDK download its dev server.');
  return { kind: 'sdk-download', downloadDir: path.join(cacheDir, 'sdk-download') };
}
