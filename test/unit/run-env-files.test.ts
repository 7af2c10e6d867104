import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RunEnvFiles } from '../../activities/sandbox/run-env-files';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'run-env-files-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('one file per content and run, written once, whole, and readable by its owner only', async () => {
  const files = new RunEnvFiles(undefined);
  const [a, again] = await Promise.all([files.fileFor('r1', dir, 'A=1\n'), files.fileFor('r1', dir, 'A=1\n')]);
  expect(again).toBe(a);
  const written = statSync(a);
  expect(await files.fileFor('r1', dir, 'A=1\n')).toBe(a);
  expect(statSync(a).mtimeMs).toBe(written.mtimeMs);
  expect(written.mode & 0o777).toBe(0o400);
  expect(readFileSync(a, 'utf8')).toBe('A=1\n');

  const b = await files.fileFor('r1', dir, 'A=2\n');
  expect(b).not.toBe(a);
  expect(readFileSync(b, 'utf8')).toBe('A=2\n');
  // No temporary file is left behind.
  expect(readdirSync(dir).sort()).toEqual([path.basename(a), path.basename(b)].sort());
});

test('a run forgotten (its directory removed) gets its file written anew', async () => {
  const files = new RunEnvFiles(undefined);
  const a = await files.fileFor('r1', dir, 'A=1\n');
  rmSync(a);
  files.forget('r1');
  expect(await files.fileFor('r1', dir, 'A=1\n')).toBe(a);
  expect(readFileSync(a, 'utf8')).toBe('A=1\n');
});

test('a failed write is not remembered', async () => {
  const files = new RunEnvFiles(undefined);
  const missing = path.join(dir, 'not-yet');
  await expect(files.fileFor('r1', missing, 'A=1\n')).rejects.toThrow(/ENOENT/);
  mkdirSync(missing);
  expect(readFileSync(await files.fileFor('r1', missing, 'A=1\n'), 'utf8')).toBe('A=1\n');
});
