import type { KeyUse } from '../../db/api-keys';
import { createKeyUseRecorder, LAST_USED_MIN_GAP_MS } from '../../services/keys/key-use-recorder';

const MINUTE = 60_000;

/** A recorder on a clock the test moves, whose writes are kept (as key id -> use time in ms). */
function recorderAt(start = 1_000_000) {
  let clock = start;
  const writes: Record<string, number>[] = [];
  let failing = false;
  const warnings: string[] = [];
  const recorder = createKeyUseRecorder({
    now: () => clock,
    write: async (uses: KeyUse[], minGapMs) => {
      expect(minGapMs).toBe(LAST_USED_MIN_GAP_MS);
      if (failing) throw new Error('database unreachable');
      writes.push(Object.fromEntries(uses.map((u) => [u.keyId, u.usedAt.getTime() - start])));
    },
    logger: { warn: (msg) => warnings.push(msg) },
    // Far off: these tests flush by hand.
    flushMs: 10 * MINUTE,
  });
  return {
    recorder,
    writes,
    warnings,
    /** Moves the clock to `ms` after the start. */
    at: (ms: number) => (clock = start + ms),
    fail: (on: boolean) => (failing = on),
  };
}

test('a key used all the time is written at most once a minute, with its latest use', async () => {
  const { recorder, writes, at } = recorderAt();
  for (let ms = 0; ms <= 3 * MINUTE; ms += 5000) {
    at(ms);
    recorder.note('a');
    await recorder.flush();
  }
  expect(writes).toEqual([{ a: 0 }, { a: MINUTE }, { a: 2 * MINUTE }, { a: 3 * MINUTE }]);
});

test('a use within the minute after a write waits for the minute to pass, then is written', async () => {
  const { recorder, writes, at } = recorderAt();
  recorder.note('a');
  await recorder.flush();
  at(10_000);
  recorder.note('a');
  at(20_000);
  recorder.note('a');
  at(MINUTE - 1);
  await recorder.flush();
  expect(writes).toEqual([{ a: 0 }]);
  at(MINUTE);
  await recorder.flush();
  expect(writes).toEqual([{ a: 0 }, { a: 20_000 }]);
  // Nothing new noted: nothing to write, and no empty statement.
  at(5 * MINUTE);
  await recorder.flush();
  expect(writes).toHaveLength(2);
});

test('keys are batched into one write, each on its own minute', async () => {
  const { recorder, writes, at } = recorderAt();
  recorder.note('a');
  recorder.note('b');
  await recorder.flush();
  at(30_000);
  recorder.note('a');
  recorder.note('c');
  await recorder.flush();
  expect(writes).toEqual([{ a: 0, b: 0 }, { c: 30_000 }]);
  at(MINUTE);
  await recorder.flush();
  expect(writes[2]).toEqual({ a: 30_000 });
});

test('a write that fails is tried again with the latest use; a later use replaces it', async () => {
  const { recorder, writes, warnings, at, fail } = recorderAt();
  fail(true);
  recorder.note('a');
  recorder.note('b');
  await recorder.flush();
  expect(warnings).toHaveLength(1);
  at(1000);
  recorder.note('b');
  fail(false);
  await recorder.flush();
  expect(writes).toEqual([{ a: 0, b: 1000 }]);
});

test('stop writes every noted use, the minute not passed included, and stops the timer', async () => {
  const { recorder, writes, at } = recorderAt();
  recorder.note('a');
  await recorder.flush();
  at(5000);
  recorder.note('a');
  recorder.note('b');
  await recorder.stop();
  expect(writes).toEqual([{ a: 0 }, { a: 5000, b: 5000 }]);
});

test('the timer writes what is noted without a flush by hand, and never holds the process up', async () => {
  const writes: string[][] = [];
  const recorder = createKeyUseRecorder({
    write: async (uses) => void writes.push(uses.map((u) => u.keyId)),
    logger: { warn: () => undefined },
    flushMs: 5,
  });
  const unref = jest.spyOn(global, 'setTimeout');
  recorder.note('a');
  const timer = unref.mock.results.at(-1)!.value as NodeJS.Timeout;
  unref.mockRestore();
  expect(timer.hasRef()).toBe(false);
  const deadline = Date.now() + 10_000;
  while (writes.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(writes).toEqual([['a']]);
  await recorder.stop();
});
