/**
 * A load generator on a thread of its own: the benchmark's HTTP client must not share the API's
 * event loop (a real client runs elsewhere), or the client's own work would count as the API's
 * latency. Loaded in the main thread it exports `startHttpLoadThread`; loaded as the thread, it
 * serves `LoadRequest`s.
 */
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import { timedConcurrently } from './bench-stack';

interface LoadRequest {
  url: string;
  init: { method: string; headers: Record<string, string>; body?: string };
  expectStatus: number;
  count: number;
  concurrency: number;
}

type LoadReply = { latencies: number[] } | { error: string };

export interface HttpLoadThread {
  /** Sends `count` requests, `concurrency` at a time; resolves with each one's latency (ms). */
  run(request: LoadRequest): Promise<number[]>;
  stop(): Promise<void>;
}

export function startHttpLoadThread(): HttpLoadThread {
  // Compiled by tsx in the thread too (a Worker does not inherit the main thread's loader).
  const worker = new Worker(`require('tsx/cjs'); require(${JSON.stringify(__filename)});`, { eval: true });
  let pending: { resolve: (l: number[]) => void; reject: (e: Error) => void } | undefined;
  worker.on('message', (reply: LoadReply) => {
    const waiting = pending;
    pending = undefined;
    if ('error' in reply) waiting?.reject(new Error(reply.error));
    else waiting?.resolve(reply.latencies);
  });
  worker.on('error', (err) => pending?.reject(err));
  return {
    run(request) {
      if (pending) return Promise.reject(new Error('one load at a time'));
      return new Promise((resolve, reject) => {
        pending = { resolve, reject };
        worker.postMessage(request);
      });
    },
    async stop() {
      await worker.terminate();
    },
  };
}

async function serve(request: LoadRequest): Promise<LoadReply> {
  try {
    const latencies = await timedConcurrently(request.count, request.concurrency, async () => {
      const res = await fetch(request.url, request.init);
      // A client reads the answer; an unread body would also keep undici from reusing the connection.
      const body = await res.text();
      if (res.status !== request.expectStatus) throw new Error(`answered ${res.status}: ${body}`);
    });
    return { latencies };
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}

if (!isMainThread) {
  parentPort!.on('message', (request: LoadRequest) => {
    void serve(request).then((reply) => parentPort!.postMessage(reply));
  });
}
