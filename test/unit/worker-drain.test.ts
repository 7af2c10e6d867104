import { WorkerDrain } from '../../worker/worker-drain';
import { RunFailureType } from '../../workflows/run-contract';

test('a drain settles once nothing runs and all was quiet a while, or at its deadline', async () => {
  const drain = new WorkerDrain();
  let finish!: () => void;
  const step = drain.track(() => new Promise<void>((resolve) => (finish = resolve)));
  expect(drain.draining).toBe(false);
  const settling = drain.settled(60_000, 50);
  expect(drain.draining).toBe(true);
  let outcome: string | undefined;
  void settling.then((o) => (outcome = o));
  await new Promise((r) => setTimeout(r, 300));
  expect(outcome).toBeUndefined();
  finish();
  await step;
  expect(await settling).toBe('idle');

  const stuck = new WorkerDrain();
  void stuck.track(() => new Promise<void>(() => undefined));
  expect(await stuck.settled(100, 10)).toBe('deadline');
});

test("a draining worker's refusal hands the run's workspace over (WORKSPACE_LOST, never retried here)", () => {
  const refusal = new WorkerDrain().refusal('w-1');
  expect(refusal.type).toBe(RunFailureType.WORKSPACE_LOST);
  expect(refusal.nonRetryable).toBe(true);
  expect(refusal.message).toContain('Worker w-1 is draining');
});
