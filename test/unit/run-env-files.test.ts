import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { RunEnvFiles } from '../../activities/sandbox/run-env-files';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'run-env-files-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('one file per content and run, written once, whole, readable by its owner only, named for nothing it holds', async () => {
  const files = new RunEnvFiles(undefined);
  const [a, again] = await Promise.all([files.acquire('r1', dir, 'A=1\n'), files.acquire('r1', dir, 'A=1\n')]);
  expect(again.file).toBe(a.file);
  const written = statSync(a.file);
  a.release();
  again.release();
  expect((await files.acquire('r1', dir, 'A=1\n')).file).toBe(a.file);
  expect(statSync(a.file).mtimeMs).toBe(written.mtimeMs);
  expect(written.mode & 0o777).toBe(0o400);
  expect(readFileSync(a.file, 'utf8')).toBe('A=1\n');
  expect(path.basename(a.file)).not.toContain(createHash('sha256').update('A=1\n').digest('base64url').slice(0, 32));

  const b = await files.acquire('r1', dir, 'A=2\n');
  expect(b.file).not.toBe(a.file);
  expect(readFileSync(b.file, 'utf8')).toBe('A=2\n');
  // No temporary file is left behind.
  expect(readdirSync(dir).sort()).toEqual([path.basename(a.file), path.basename(b.file)].sort());
});

test('beyond eight, the oldest files no process uses are removed; those in use stay', async () => {
  const files = new RunEnvFiles(undefined);
  const inUse = await files.acquire('r1', dir, 'TOKEN=0\n');
  const done: string[] = [];
  for (let i = 1; i <= 12; i++) {
    const env = await files.acquire('r1', dir, `TOKEN=${i}\n`);
    env.release();
    done.push(env.file);
  }
  const left = readdirSync(dir).map((name) => path.join(dir, name));
  expect(left).toHaveLength(8);
  expect(left).toContain(inUse.file);
  expect(left.sort()).toEqual([inUse.file, ...done.slice(-7)].sort());
});

test('a run forgotten (its directory removed) gets its file written anew', async () => {
  const files = new RunEnvFiles(undefined);
  const a = await files.acquire('r1', dir, 'A=1\n');
  rmSync(a.file);
  files.forget('r1');
  expect((await files.acquire('r1', dir, 'A=1\n')).file).toBe(a.file);
  expect(readFileSync(a.file, 'utf8')).toBe('A=1\n');
});

test('a failed write is not remembered', async () => {
  const files = new RunEnvFiles(undefined);
  const missing = path.join(dir, 'not-yet');
  await expect(files.acquire('r1', missing, 'A=1\n')).rejects.toThrow(/ENOENT/);
  mkdirSync(missing);
  expect(readFileSync((await files.acquire('r1', missing, 'A=1\n')).file, 'utf8')).toBe('A=1\n');
});
