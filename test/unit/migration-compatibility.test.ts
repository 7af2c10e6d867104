import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The rollout rule (docs/operations.md, "Rollouts"): the build before a migration runs on the
 * schema after it, so a migration's `up` only adds: tables, nullable columns or columns with a
 * default, indexes, constraints rows already satisfy. Removing or renaming what an older build reads
 * waits for a later release, once no running build reads it (expand, then contract), and is listed
 * here with why the build before it never reads it.
 */
const DIR = path.resolve(__dirname, '..', '..', 'db', 'migrations');

const BREAKING: [RegExp, string][] = [
  [/\bDROP\s+(COLUMN|TABLE)\b/i, 'drops what the build before may read'],
  [/\bRENAME\b/i, 'renames what the build before reads by its old name'],
  [/\bSET\s+NOT\s+NULL\b/i, 'makes the build before fail on the rows it writes without the column'],
  [
    /\bADD\s+COLUMN\b(?![^,`]*\bDEFAULT\b)[^,`]*\bNOT\s+NULL\b/i,
    'adds a required column the build before does not write',
  ],
  [/\bALTER\s+COLUMN\s+\w+\s+TYPE\b/i, 'changes a type the build before reads'],
];

/** Reviewed exceptions: the migration, and why the build before it runs on its schema. */
const REVIEWED: Record<string, string> = {
  '1763910000000-resource-list-indexes.ts':
    'timestamptz(3) to timestamptz keeps every value; the build before reads it as a Date either way',
};

function upOf(source: string): string {
  const match = /async up\([\s\S]*?\n {2}\}\n/.exec(source);
  if (!match) throw new Error('no up()');
  return match[0];
}

test("every migration's up() is one the build before it runs on, or a reviewed exception", () => {
  const problems: string[] = [];
  for (const file of readdirSync(DIR)
    .filter((f) => f.endsWith('.ts'))
    .sort()) {
    if (REVIEWED[file]) continue;
    const up = upOf(readFileSync(path.join(DIR, file), 'utf8'));
    for (const [pattern, why] of BREAKING) if (pattern.test(up)) problems.push(`${file}: ${why} (${pattern.source})`);
  }
  expect(problems).toEqual([]);
});

test('the check finds what it is for', () => {
  const found = (sql: string) => BREAKING.filter(([pattern]) => pattern.test(sql)).map(([, why]) => why);
  expect(found('ALTER TABLE runs DROP COLUMN title')).toHaveLength(1);
  expect(found('ALTER TABLE runs RENAME COLUMN title TO name')).toHaveLength(1);
  expect(found('ALTER TABLE runs ALTER COLUMN title SET NOT NULL')).toHaveLength(1);
  expect(found('ALTER TABLE runs ADD COLUMN owner text NOT NULL')).toHaveLength(1);
  expect(found("ALTER TABLE runs ADD COLUMN owner text NOT NULL DEFAULT ''")).toEqual([]);
  expect(found('ALTER TABLE runs ADD COLUMN owner text')).toEqual([]);
  expect(found('CREATE TABLE t (id uuid PRIMARY KEY, n text NOT NULL)')).toEqual([]);
});

test('every reviewed exception is a migration that exists', () => {
  const files = readdirSync(DIR);
  for (const file of Object.keys(REVIEWED)) expect(files).toContain(file);
});
