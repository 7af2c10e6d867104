/**
 * The resource attack of issue 19, against a worker's sandbox on this machine: one run starts
 * three processes of 2,000 MiB each (AGENT_SANDBOX_MEMORY_MB=4096), then two runs start 700
 * `sleep`s each (AGENT_SANDBOX_MAX_PROCESSES=512). Prints host memory used and the host's process
 * count at their peak. `npx tsx bench/run-limits-attack.ts` (as root, like a worker).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { createTestSandbox } from '../test/helpers/sandbox';

const usedMiB = () => {
  const info = Object.fromEntries(
    readFileSync('/proc/meminfo', 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => [l.split(':')[0], Number(l.split(/\s+/)[1])]),
  ) as Record<string, number>;
  return Math.round((info.MemTotal! - info.MemAvailable!) / 1024);
};
const processCount = () => readdirSync('/proc').filter((e) => /^\d+$/.test(e)).length;

async function peak<T>(work: Promise<T>): Promise<{ result: T; memory: number; processes: number }> {
  let memory = usedMiB();
  let processes = processCount();
  const timer = setInterval(() => {
    memory = Math.max(memory, usedMiB());
    processes = Math.max(processes, processCount());
  }, 100);
  const result = await work;
  clearInterval(timer);
  return { result, memory, processes };
}

async function main(): Promise<void> {
  const env = {
    AGENT_SANDBOX_MEMORY_MB: '4096',
    AGENT_SANDBOX_MAX_PROCESSES: '512',
    AGENT_RUN_LIMITS: process.env.AGENT_RUN_LIMITS ?? 'enforce',
  };
  const { sandbox, processes } = await createTestSandbox(env);
  process.stdout.write(`run limits: ${sandbox.runLimits ?? 'off'}\n`);
  const before = { memory: usedMiB(), processes: processCount() };
  const hog = `node -e "const b = Buffer.alloc(2000 << 20, 1); setTimeout(() => console.log('alive', b.length), 5000)" &`;
  const one = await processes('attack-memory');
  const memory = await peak(
    one.runCommand({ command: `${hog} ${hog} ${hog} wait`, policy: 'none', timeoutMs: 60_000, keepBytes: 65536 }),
  );
  const alive = (memory.result.output.match(/^alive \d+$/gm) ?? []).length;
  const sleeps = 'for i in $(seq 700); do sleep 5 & done 2>/dev/null; wait; echo started';
  const [a, b] = await Promise.all([processes('attack-pids-a'), processes('attack-pids-b')]);
  const pids = await peak(
    Promise.all(
      [a, b].map((p) => p.runCommand({ command: sleeps, policy: 'none', timeoutMs: 60_000, keepBytes: 65536 })),
    ),
  );
  for (const run of ['attack-memory', 'attack-pids-a', 'attack-pids-b']) await sandbox.destroyRun(run);
  process.stdout.write(
    [
      `before:            ${before.memory} MiB used, ${before.processes} processes`,
      `3 x 2000 MiB:      peak ${memory.memory} MiB used (+${memory.memory - before.memory}); ${alive} of 3 lived; OOM kill reported: ${memory.result.oomKilled}`,
      `2 runs x 700 sleep: peak ${pids.processes} processes (+${pids.processes - before.processes})`,
    ].join('\n') + '\n',
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
