import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { metricsRegistry, serviceStateMetrics, workerCapacityMetrics } from '../../core/metrics';
import { ensurePromtool } from '../../infra/promtool';

/**
 * The alert and recording rules of deploy/prometheus/rules, checked by Prometheus's own promtool
 * (built once into the cache; CI builds it before the tests): they load, and their unit tests
 * (rules/tests/) pass. Every alert links its runbook section, is tested firing and not firing,
 * and names only metrics the service exports, those of the Temporal SDK, or `up`.
 */
const run = promisify(execFile);
const root = path.join(__dirname, '..', '..');
const rulesDir = path.join(root, 'deploy', 'prometheus', 'rules');
const ruleFiles = readdirSync(rulesDir).filter((f) => f.endsWith('.rules.yml'));
const testFiles = readdirSync(path.join(rulesDir, 'tests')).map((f) => path.join(rulesDir, 'tests', f));

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  annotations?: Record<string, string>;
}
const rules: Rule[] = ruleFiles.flatMap((file) =>
  (parse(readFileSync(path.join(rulesDir, file), 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap(
    (g) => g.rules,
  ),
);
const alerts = rules.filter((r) => r.alert);

let promtool: string;
beforeAll(async () => {
  promtool = await ensurePromtool();
}, 1_800_000);

test('promtool check rules: every rule file loads', async () => {
  expect(ruleFiles).toEqual(['agent-runs.rules.yml']);
  const { stdout } = await run(promtool, ['check', 'rules', ...ruleFiles.map((f) => path.join(rulesDir, f))]);
  expect(stdout).toContain('SUCCESS');
});

test('promtool test rules: every rule test passes', async () => {
  const { stdout } = await run(promtool, ['test', 'rules', ...testFiles]);
  expect(stdout).toContain('SUCCESS');
});

test('every alert is tested firing and not firing', () => {
  const tested = testFiles.flatMap((file) =>
    (
      parse(readFileSync(file, 'utf8')) as {
        tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
      }
    ).tests.flatMap((t) => t.alert_rule_test ?? []),
  );
  for (const { alert } of alerts) {
    const cases = tested.filter((t) => t.alertname === alert);
    expect([alert, cases.some((t) => t.exp_alerts.length > 0), cases.some((t) => t.exp_alerts.length === 0)]).toEqual([
      alert,
      true,
      true,
    ]);
  }
});

test("every alert's runbook_url is a section of docs/runbooks.md", () => {
  const runbooks = readFileSync(path.join(root, 'docs', 'runbooks.md'), 'utf8');
  // GitHub's anchors: the heading lowercased, punctuation dropped, spaces as hyphens.
  const anchors = [...runbooks.matchAll(/^#{2,3} (.+)$/gm)].map((m) =>
    m[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\w\- ]/g, '')
      .replace(/ /g, '-'),
  );
  expect(alerts.length).toBeGreaterThanOrEqual(10);
  for (const { alert, annotations } of alerts) {
    const url = annotations?.runbook_url ?? '';
    expect([alert, url]).toEqual([alert, `docs/runbooks.md#${alert!.toLowerCase()}`]);
    expect(anchors).toContain(url.split('#')[1]);
  }
});

test("the rules name only metrics the service exports, the Temporal SDK's, up, and their own records", async () => {
  // Every family the service serves: the registry, the API's state and a worker's room.
  const stateText = await serviceStateMetrics({
    runQueue: async () => ({
      waiting: { admission: { runs: 0, oldestSeconds: 0 }, worker: { runs: 0, oldestSeconds: 0 } },
      inProgress: 0,
      blocked: 0,
      longestSilenceSeconds: 0,
    }),
    keysExpiringWithin: async () => 0,
    temporalReachable: async () => true,
  })();
  const roomText = await workerCapacityMetrics({
    slots: () => ({ used: 0, capacity: 1 }),
    workspaceDir: os.tmpdir(),
  })();
  const families = [
    ...(await metricsRegistry.getMetricsAsJSON()).map((m) => ({ name: m.name, type: String(m.type) })),
    ...[...`${stateText}\n${roomText}`.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => ({ name: m[1]!, type: m[2]! })),
  ];
  const exported = new Set(
    families.flatMap(({ name, type }) =>
      type === 'histogram' ? [`${name}_bucket`, `${name}_count`, `${name}_sum`] : [name],
    ),
  );
  const recorded = new Set(rules.flatMap((r) => (r.record ? [r.record] : [])));
  for (const { expr } of rules) {
    for (const [name] of expr.matchAll(/\b(agent_runs[_:][a-zA-Z0-9_:]*|temporal_[a-z0-9_]+|up)\b/g)) {
      const known = name.includes(':')
        ? recorded.has(name)
        : name.startsWith('temporal_') || name === 'up' || exported.has(name);
      expect([name, known]).toEqual([name, true]);
    }
  }
});
