import { Context } from '@temporalio/activity';

/** Beats every second while `work` runs, so cancellation and a dead worker are noticed quickly. */
export async function withHeartbeat<T>(work: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  const timer = setInterval(() => ctx.heartbeat(), 1000);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
