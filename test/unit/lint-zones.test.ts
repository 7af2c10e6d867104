import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const ROOT = path.resolve(__dirname, '../..');

/** What `npm run lint`'s ESLint says of `text` as the content of `file` (an existing file, for the typed rules). */
async function lintAs(files: { file: string; text: string }[]): Promise<{ file: string; rules: string[] }[]> {
  const script = `
    import { ESLint } from 'eslint';
    const eslint = new ESLint({ cwd: process.cwd() });
    const files = JSON.parse(process.argv[1]);
    const out = [];
    for (const { file, text } of files) {
      const [result] = await eslint.lintText(text, { filePath: file });
      out.push({ file, rules: result.messages.map((m) => m.ruleId ?? m.message) });
    }
    process.stdout.write(JSON.stringify(out));
  `;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--input-type=module', '-e', script, JSON.stringify(files)],
    { cwd: ROOT, maxBuffer: 10 * 1024 * 1024 },
  );
  return JSON.parse(stdout) as { file: string; rules: string[] }[];
}

const source = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

test('the lint refuses a route importing a db/ write module, a read module writing SQL or importing a write; it passes reads', async () => {
  const route = 'api/routes/webhooks-routes.ts';
  const reads = 'db/webhook-reads.ts';
  const results = await lintAs([
    { file: route, text: source(route) },
    {
      file: route,
      text: `import { insertWebhook } from '../../db/webhooks';\nexport const writes = insertWebhook;\n${source(route)}`,
    },
    { file: reads, text: source(reads) },
    {
      file: reads,
      text: `${source(reads)}\nexport const sneaky = (m: EntityManager) => m.query(\`DELETE FROM webhooks\`);\n`,
    },
    {
      file: reads,
      text: `import { deleteWebhook } from './webhooks';\n${source(reads)}\nexport const alsoSneaky = deleteWebhook;\n`,
    },
  ]);
  expect(results.map((r) => r.rules)).toEqual([
    [],
    ['import-x/no-restricted-paths'],
    [],
    ['no-restricted-syntax'],
    ['import-x/no-restricted-paths'],
  ]);
}, 120_000);
