import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cachedWorkflowBundle } from '../worker/workflow-bundle-cache';

/** `npm start`'s workflow bundle is made once and made again when a module of it changes. */
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-bundle-cache-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('kept while every module of it is unchanged, bundled again when one changed', async () => {
  const bundle = await cachedWorkflowBundle(dir);
  expect(readFileSync(bundle, 'utf8')).toContain('./workflows/run-workflow.ts');
  const manifestFile = path.join(dir, 'workflow-bundle.json');
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as { files: Record<string, string> };
  expect(manifest.files['./workflows/run-workflow.ts']).toMatch(/^[0-9a-f]{64}$/);
  expect(Object.keys(manifest.files).some((f) => f.startsWith('./node_modules/@temporalio/workflow/'))).toBe(true);

  const made = statSync(bundle).mtimeMs;
  expect(await cachedWorkflowBundle(dir)).toBe(bundle);
  expect(statSync(bundle).mtimeMs).toBe(made);

  // As if workflows/run-workflow.ts had changed since: its recorded hash no longer matches.
  manifest.files['./workflows/run-workflow.ts'] = '0'.repeat(64);
  writeFileSync(manifestFile, JSON.stringify(manifest));
  expect(await cachedWorkflowBundle(dir)).toBe(bundle);
  expect(statSync(bundle).mtimeMs).toBeGreaterThan(made);
  const rebuilt = JSON.parse(readFileSync(manifestFile, 'utf8')) as { files: Record<string, string> };
  expect(rebuilt.files['./workflows/run-workflow.ts']).not.toBe('0'.repeat(64));
}, 120_000);
