import path from 'node:path';
import type { RunProcesses } from '../sandbox/sandboxed-process';
import { SMALL_SCRIPT_FLAGS } from '../sandbox/workspace-files';

/**
 * Writes files under the run's home as the run's own user, inside its sandbox: the run controls
 * its home, so the worker never follows a path there itself. Runs as `node -e` with the files on
 * standard input.
 */
const WRITER = `
const fs = require('node:fs');
const path = require('node:path');
const home = process.argv[1];
let input = '';
process.stdin.on('data', (c) => (input += c));
process.stdin.on('end', () => {
  for (const [rel, content] of Object.entries(JSON.parse(input))) {
    const file = path.resolve(home, rel);
    if (!file.startsWith(home + '/')) throw new Error('outside the home: ' + rel);
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    fs.rmSync(file, { force: true });
    fs.writeFileSync(file, content, { mode: 0o600 });
  }
});
`;

export async function writeHomeFiles(
  processes: RunProcesses,
  home: string,
  files: Record<string, string>,
  signal: AbortSignal,
): Promise<void> {
  if (!Object.keys(files).length) return;
  await processes.exec([process.execPath, ...SMALL_SCRIPT_FLAGS, '-e', WRITER, path.posix.normalize(home)], {
    input: JSON.stringify(files),
    signal,
    timeoutMs: 30_000,
  });
}
