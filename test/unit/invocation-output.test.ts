import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  createInvocationOutput,
  leftOverOutputs,
  releaseInvocationOutput,
  removeInvocationOutput,
} from '../../activities/harness/invocation-output';
import { harnessOutputDir } from '../../activities/workspace/workspace-paths';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'invocation-output-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

test("an invocation gets an empty file of the run's processes' uid alone, in directories they cannot list", async () => {
  // A worker running as root gives it to the run's uid; any other runs the processes as itself.
  const owner = process.getuid!() === 0 ? 54321 : undefined;
  const output = await createInvocationOutput(root, 'run-1', { turn: 2, step: 0, attempt: '3' }, owner);
  expect(output).toEqual({
    path: path.join(harnessOutputDir(root, 'run-1'), 't2-s0-i3.jsonl'),
    turn: 2,
    step: 0,
    attempt: '3',
  });
  const file = await stat(output.path);
  expect([file.size, file.mode & 0o777, file.uid]).toEqual([0, 0o600, owner ?? process.getuid!()]);
  expect((await stat(harnessOutputDir(root, 'run-1'))).mode & 0o777).toBe(0o711);
  expect((await stat(path.dirname(harnessOutputDir(root, 'run-1')))).mode & 0o777).toBe(0o711);
});

test('what is left is listed in the order the invocations ran; other names are not outputs', async () => {
  for (const name of ['t2-s0-i1.jsonl', 't1-s1-i2r.jsonl', 't1-s1-i2.jsonl', 't1-s1-i10.jsonl', 't1-s0-i1.jsonl'])
    await releaseInvocationOutput(await createInvocationOutput(root, 'run-1', parse(name)), false);
  await writeFile(path.join(harnessOutputDir(root, 'run-1'), 'notes.txt'), '');
  await writeFile(path.join(harnessOutputDir(root, 'run-1'), 't1-s0-i1.jsonl.tmp'), '');
  const left = await leftOverOutputs(root, 'run-1');
  expect(left.map((o) => path.basename(o.path))).toEqual([
    't1-s0-i1.jsonl',
    't1-s1-i2.jsonl',
    't1-s1-i2r.jsonl',
    't1-s1-i10.jsonl',
    't2-s0-i1.jsonl',
  ]);
  expect(left[2]).toMatchObject({ turn: 1, step: 1, attempt: '2r' });
  await removeInvocationOutput(left[0]!);
  expect(await leftOverOutputs(root, 'run-1')).toHaveLength(4);
});

test('an output in use by an invocation of this process is not left over; released, it is removed once recorded', async () => {
  const running = await createInvocationOutput(root, 'run-1', { turn: 1, step: 0, attempt: '1' });
  expect(await leftOverOutputs(root, 'run-1')).toEqual([]);
  await releaseInvocationOutput(running, false);
  expect(await leftOverOutputs(root, 'run-1')).toEqual([running]);

  const next = await createInvocationOutput(root, 'run-1', { turn: 1, step: 0, attempt: '2' });
  await releaseInvocationOutput(next, true);
  expect(await leftOverOutputs(root, 'run-1')).toEqual([running]);
});

test('a run that never ran a CLI has nothing left', async () => {
  expect(await leftOverOutputs(root, 'never')).toEqual([]);
});

function parse(name: string) {
  const [, turn, step, attempt] = /^t(\d+)-s(\d+)-i(\d+r?)\.jsonl$/.exec(name)!;
  return { turn: Number(turn), step: Number(step), attempt: attempt! };
}
