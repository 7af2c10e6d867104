import { CancelledFailure, Context } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { writeThroughOutage } from '../../activities/write-through-outage';
import { DatabaseUnreachableError } from '../../core/dependency-errors';
import { createLogger } from '../../core/logger';
import type { DatabaseState } from '../../db/database-gate';
import { SILENT_LOGGER } from '../helpers/silent-logger';

const log = createLogger('error', 'test');
const poolTimeout = () => new Error('timeout exceeded when trying to connect');

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

/** Runs the helper in an activity whose sleep only counts: the helper must wait with it, so a cancel ends the wait. */
async function writeInActivity(write: () => Promise<string>, state: () => DatabaseState) {
  const slept: number[] = [];
  const result = new MockActivityEnvironment(undefined, { logger: SILENT_LOGGER }).run(() => {
    const sleep = (ms: number | string) => (slept.push(Number(ms)), Promise.resolve());
    return writeThroughOutage({ ...Context.current(), sleep } as unknown as Context, log, 'a reply', state, write);
  });
  return { result, slept };
}

describe('writeThroughOutage', () => {
  test('tries a write that failed for want of PostgreSQL again every second until it goes through', async () => {
    const flaky = flakyWrite([new DatabaseUnreachableError(), poolTimeout(), new Error('x', { cause: poolTimeout() })]);
    const { result, slept } = await writeInActivity(flaky.write, () => 'unreachable');
    await expect(result).resolves.toBe('done');
    expect(flaky.tries()).toBe(4);
    expect(slept).toEqual([1000, 1000, 1000]);
  });

  test('waits out an outage however long it lasts', async () => {
    const flaky = flakyWrite(Array.from({ length: 50 }, () => new DatabaseUnreachableError()));
    const { result } = await writeInActivity(flaky.write, () => 'unreachable');
    await expect(result).resolves.toBe('done');
    expect(flaky.tries()).toBe(51);
  });

  test.each(['reachable', 'checking'] as const)(
    'gives up after ten failures while the gate is %s: the write fails for itself',
    async (state) => {
      // A full pool's timeout reaches the write after the gate began checking (db/guarded-pg.ts).
      const flaky = flakyWrite(Array.from({ length: 50 }, poolTimeout));
      const { result } = await writeInActivity(flaky.write, () => state);
      await expect(result).rejects.toThrow('timeout exceeded when trying to connect');
      expect(flaky.tries()).toBe(10);
    },
  );

  test('an outage between failures starts their count again', async () => {
    const states: DatabaseState[] = [
      ...Array.from({ length: 9 }, () => 'checking' as const),
      'unreachable',
      ...Array.from({ length: 9 }, () => 'checking' as const),
    ];
    const flaky = flakyWrite(Array.from({ length: 19 }, poolTimeout));
    const { result } = await writeInActivity(flaky.write, () => states.shift() ?? 'checking');
    await expect(result).resolves.toBe('done');
    expect(flaky.tries()).toBe(20);
  });

  test('lets any other failure through at once', async () => {
    const flaky = flakyWrite([new Error('duplicate key value violates unique constraint')]);
    const { result, slept } = await writeInActivity(flaky.write, () => 'unreachable');
    await expect(result).rejects.toThrow('duplicate key');
    expect(flaky.tries()).toBe(1);
    expect(slept).toEqual([]);
  });

  test('stops waiting when the activity is cancelled', async () => {
    const env = new MockActivityEnvironment(undefined, { logger: SILENT_LOGGER });
    let tries = 0;
    const writing = env.run(() =>
      writeThroughOutage(
        Context.current(),
        log,
        'a reply',
        () => 'unreachable',
        async () => {
          tries += 1;
          if (tries === 1) setImmediate(() => env.cancel());
          throw new DatabaseUnreachableError();
        },
      ),
    );
    await expect(writing).rejects.toBeInstanceOf(CancelledFailure);
    expect(tries).toBe(1);
  });
});
