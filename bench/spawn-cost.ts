/**
 * Benchmark: how long starting a child process blocks a Node process's event loop, by the
 * process's resident memory. Node forks on its main thread, and a fork copies the page tables of
 * the whole process: a worker of several hundred MiB pays tens of milliseconds of stalled event
 * loop for every process it starts (every sandboxed command, git call, du).
 * Usage: npm run bench:spawn -- [rounds=200] [MiB sizes, comma-separated=0,200,400,800,1600]
 */
import { spawn } from 'node:child_process';
import { percentile } from './bench-stack';

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 200);
  const sizes = (process.argv[3] ?? '0,200,400,800,1600').split(',').map(Number);
  const held: Buffer[] = [];
  for (const size of sizes) {
    // Touched memory, as a worker's heap and caches are.
    while (process.memoryUsage().rss < size * 1024 * 1024) held.push(Buffer.alloc(1024 * 1024, 1));
    const blocked: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const started = process.hrtime.bigint();
      const child = spawn('/bin/true', [], { stdio: 'ignore' });
      blocked.push(Number(process.hrtime.bigint() - started) / 1e6);
      await new Promise((resolve) => child.on('close', resolve));
    }
    process.stdout.write(
      `rss ${(process.memoryUsage().rss / 1048576).toFixed(0).padStart(5)} MiB   spawn() blocks the event loop p50 ${percentile(blocked, 50).toFixed(2).padStart(6)} ms   p95 ${percentile(blocked, 95).toFixed(2).padStart(6)} ms\n`,
    );
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
