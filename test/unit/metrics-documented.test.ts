import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** Every metric the service defines (core/metrics/) has its row in the operations guide's table. */
const ROOT = path.resolve(__dirname, '..', '..');

test("every agent_runs_* metric is in docs/operations.md's Metrics table", () => {
  const dir = path.join(ROOT, 'core', 'metrics');
  const defined = readdirSync(dir)
    .flatMap((file) => [...readFileSync(path.join(dir, file), 'utf8').matchAll(/name: '(agent_runs_[a-z_]+)'/g)])
    .map((m) => m[1]!);
  expect(defined.length).toBeGreaterThan(30);
  const table = readFileSync(path.join(ROOT, 'docs', 'operations.md'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('| `agent_runs_'))
    .join('\n');
  expect(defined.filter((name) => !table.includes(`\`${name}\``))).toEqual([]);
});
