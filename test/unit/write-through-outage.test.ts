import { Context } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DatabaseUnreachableError } from '../../core/dependency-errors';
import { createLogger } from '../../core/logger';
import { writeThroughOutage } from '../../activities/write-through-outage';

const log = createLogger('error', 'test');
const poolTimeout = () => new Error('timeout exceeded when trying to connect');

const quiet = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};
const activityEnvironment = () => new MockActivityEnvironment(undefined, { logger: quiet });

/** A write that fails with `failures` in turn, then answers `done`; counts its tries. */
function flakyWrite(failures: Error[]) {
  let tries = 0;
  const write = async () => {
    tries += 1;
    const failure = failures[tries - 1];
    if (failure) throw failure;
    return 'done';
  };
  return { write, tries: () => tries };
}

describe('writeThroughOutage', () => {
  test('tries a write that failed for want of PostgreSQL again until it goes through', async () => {
    const flaky = flakyWrite([new DatabaseUnreachableError(), poolTimeout(), new Error('x', { cause: poolTimeout() })]);
    const env = activityEnvironment();
    const slept: number[] = [];
    // No real waiting: the context's sleep is the one the helper must use, so a cancel ends it.
    const result = await env.run(() => {
      const ctx = Context.current();
      const sleep = (ms: number | string) => (slept.push(Number(ms)), Promise.resolve());
      return writeThroughOutage({ ...ctx, sleep } as unknown as Context, log, 'a reply', flaky.write);
    });
    expect(result).toBe('done');
    expect(flaky.tries()).toBe(4);
    expect(slept).toEqual([1000, 1000, 1000]);
  });

  test('lets any other failure through at once', async () => {
    const flaky = flakyWrite([new Error('duplicate key value violates unique constraint')]);
    const env = activityEnvironment();
    await expect(env.run(() => writeThroughOutage(Context.current(), log, 'a reply', flaky.write))).rejects.toThrow(
      'duplicate key',
    );
    expect(flaky.tries()).toBe(1);
  });

  test('stops waiting when the activity is cancelled', async () => {
    const env = activityEnvironment();
    let tries = 0;
    const writing = env.run(() =>
      writeThroughOutage(Context.current(), log, 'a reply', async () => {
        tries += 1;
        if (tries === 1) setImmediate(() => env.cancel());
        throw new DatabaseUnreachableError();
      }),
    );
    await expect(writing).rejects.toThrow();
    expect(tries).toBe(1);
  });
});
