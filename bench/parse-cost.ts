/**
 * Benchmark: what validating a factory tree costs, in this process (validateFactoryTree, as every
 * caller did before issue 42) and in the parse child (validateUntrustedTree, what the endpoint,
 * discovery and the agent's tool do now), for a normal tree and for hostile ones. Wall time per
 * validation, and CPU per validation of this process and of the child. Needs no stack.
 * Usage: npm run bench:parse -- [rounds=200] (the 250 KiB files a twentieth of them)
 */
import { validateFactoryTree, type TreeFile } from '../core/factory-tree/validate-tree';
import { parseChild, validateUntrustedTree } from '../services/untrusted-parse/untrusted-parser';
import { ALIAS_BOMB, DEEP_FLOW, DEEP_FRONT_MATTER, hugeInputs } from '../test/helpers/hostile-yaml';
import { percentile } from './bench-stack';
import { cpuOf } from './process-tree-cpu';

const agent = (type: string, i: number) =>
  `---\nagent_type: ${type}\ndescription: Agent ${i} of the team\nbase_model: openai/gpt-4o\nskills: [acme/tools:lint, agent-runs/bundled:factory-files]\n---\n${'You review changes and say what to fix. '.repeat(40)}\n`;
const huge = hugeInputs();

const TREES: Record<string, TreeFile[] & { huge?: true }> = {
  'a normal tree (factory.yaml, 4 agents, 8 KB)': [
    { path: 'factory.yaml', content: 'name: review-team\ndescription: Reviews changes\ninstructions: Be brief.\n' },
    ...['FOREMAN', 'IMPLEMENT', 'REVIEW', 'CUSTOM'].map((type, i) => ({
      path: `agents/a${i}/agent.md`,
      content: agent(type, i),
    })),
  ],
  "the issue's body (alias bomb, 100,000-bracket front matter)": [
    { path: 'factory.yaml', content: ALIAS_BOMB },
    { path: 'agents/a/agent.md', content: DEEP_FRONT_MATTER },
  ],
  '50,000 nested [ in factory.yaml': [{ path: 'factory.yaml', content: DEEP_FLOW }],
  '250 KiB factory.yaml of 25,000 keys': Object.assign([{ path: 'factory.yaml', content: huge['many keys']! }], {
    huge: true as const,
  }),
  '250 KiB factory.yaml of 250,000 unmatched ] (a YAML error each)': Object.assign(
    [{ path: 'factory.yaml', content: ']'.repeat(250_000) }],
    { huge: true as const },
  ),
  '250 KiB factory.yaml of one 128,000-item list': Object.assign(
    [{ path: 'factory.yaml', content: huge['one flow list']! }],
    { huge: true as const },
  ),
};

async function measure(rounds: number, validate: () => Promise<unknown>) {
  await validate(); // warm-up: the child's start, V8's compilation
  const latencies: number[] = [];
  const cpu = await cpuOf('this process', async () => {
    for (let i = 0; i < rounds; i++) {
      const started = performance.now();
      await validate();
      latencies.push(performance.now() - started);
    }
  });
  const child = [...cpu.byCommand].filter(([command]) => command !== 'this process').reduce((a, [, ms]) => a + ms, 0);
  const own = cpu.byCommand.get('this process') ?? 0;
  return `p50 ${percentile(latencies, 50).toFixed(1).padStart(7)} ms  p95 ${percentile(latencies, 95).toFixed(1).padStart(7)} ms  CPU here ${(own / rounds).toFixed(1).padStart(6)} ms  in the child ${(child / rounds).toFixed(1).padStart(6)} ms`;
}

async function main(): Promise<void> {
  const many = Number(process.argv[2] ?? 200);
  const log = (m: string) => process.stdout.write(`${m}\n`);
  log(`Per validation (CPU from /proc in 10 ms ticks, averaged over the rounds):`);
  for (const [name, files] of Object.entries(TREES)) {
    const rounds = files.huge ? Math.max(5, Math.round(many / 20)) : many;
    log(`${name}, ${rounds} rounds`);
    log(`  in-process ${await measure(rounds, async () => validateFactoryTree(files, () => true))}`);
    log(`  child      ${await measure(rounds, () => validateUntrustedTree(files, undefined))}`);
  }
  parseChild().close();
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
