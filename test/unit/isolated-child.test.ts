import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  createIsolatedChild,
  IsolatedChildError,
  type IsolatedChild,
  type IsolatedChildOptions,
} from '../../infra/isolated-child';

/**
 * The child process that parses what nobody vouched for: whatever ends it (a loop, an exhausted
 * heap, a kill, V8 aborting on the deep YAML), the job gets an IsolatedChildError, this
 * process goes on, and the next job runs in a new child.
 */

const JOBS = path.join(__dirname, '..', 'fixtures', 'isolated-child-jobs.ts');
const children: IsolatedChild[] = [];
afterAll(() => children.forEach((child) => child.close()));

function isolated(options: Partial<IsolatedChildOptions> = {}): IsolatedChild {
  const child = createIsolatedChild({
    entry: JOBS,
    deadlineMs: 60_000,
    maxOldSpaceMb: 64,
    stackSizeKb: 512,
    ...options,
  });
  children.push(child);
  return child;
}

interface Echo {
  echoed: unknown;
  pid: number;
}

async function failureOf(job: Promise<unknown>): Promise<IsolatedChildError> {
  const outcome = await job.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(outcome).toBeInstanceOf(IsolatedChildError);
  return outcome as IsolatedChildError;
}

test('jobs are answered in order by one child, plain data both ways; a job that throws leaves the child', async () => {
  const child = isolated();
  const answers = (await Promise.all([1, 2, 3].map((n) => child.run('echo', { n, list: [n] })))) as Echo[];
  expect(answers.map((answer) => answer.echoed)).toEqual([1, 2, 3].map((n) => ({ n, list: [n] })));
  expect(new Set(answers.map((answer) => answer.pid))).toEqual(new Set([child.pid]));
  await expect(child.run('fail', null)).rejects.toThrow('a bug in the job');
  expect(((await child.run('echo', 4)) as Echo).pid).toBe(answers[0]!.pid);
});

test('a job past its deadline: the child is killed, the job refused as a timeout, the next job has a new child', async () => {
  const child = isolated({ deadlineMs: 3_000 });
  const before = (await child.run('echo', 0)) as Echo;
  const err = await failureOf(child.run('spin', null));
  expect(err).toMatchObject({ reason: 'timeout', limits: { deadlineMs: 3_000, maxOldSpaceMb: 64 } });
  const after = (await child.run('echo', 1)) as Echo;
  expect(after.pid).not.toBe(before.pid);
});

test('a child killed mid-job: that job is refused, the jobs queued behind it run in the next child', async () => {
  const child = isolated();
  const [killed, ...queued] = await Promise.allSettled([
    child.run('killed', null),
    child.run('echo', 1),
    child.run('echo', 2),
  ]);
  expect(killed).toMatchObject({
    status: 'rejected',
    reason: { reason: 'exited', message: expect.stringMatching(/SIGKILL/) },
  });
  expect(queued.map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled']);
});

test('a child that runs out of its heap (V8 aborts it): the job is refused, this process goes on', async () => {
  const child = isolated({ maxOldSpaceMb: 32 });
  const err = await failureOf(child.run('exhaustHeap', null));
  expect(err).toMatchObject({ reason: 'exited', message: expect.stringMatching(/SIGABRT \(FATAL ERROR: .*heap/) });
  expect(((await child.run('echo', 'after')) as Echo).echoed).toBe('after');
});

test("the issue's deep YAML, parsed with no depth check until V8 aborts or the deadline comes: refused, and this process goes on", async () => {
  const child = isolated({ deadlineMs: 8_000 });
  const err = await failureOf(child.run('parseDeepYaml', null));
  expect(['exited', 'timeout']).toContain(err.reason);
  expect(((await child.run('echo', 'after')) as Echo).echoed).toBe('after');
});

test('a child that cannot start: its jobs are refused, not left waiting', async () => {
  const child = isolated({ entry: path.join(__dirname, 'no-such-child.js') });
  const [first, second] = await Promise.allSettled([child.run('echo', 1), child.run('echo', 2)]);
  expect([first.status, second.status]).toEqual(['rejected', 'rejected']);
  expect(first).toMatchObject({ reason: { reason: 'exited', message: expect.stringMatching(/Cannot find module/) } });
});

test('an idle child keeps no process alive: a script that ran a job exits by itself', async () => {
  const script = `
    const { createIsolatedChild } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'infra', 'isolated-child.ts'))});
    const child = createIsolatedChild({ entry: ${JSON.stringify(JOBS)}, deadlineMs: 60000, maxOldSpaceMb: 64, stackSizeKb: 512 });
    child.run('echo', 'hello').then((answer) => console.log(answer.echoed));
  `;
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '-e', script], {
    timeout: 60_000,
  });
  expect(stdout.trim()).toBe('hello');
});
