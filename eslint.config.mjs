import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import prettier from 'eslint-config-prettier';

/**
 * The layers, top to bottom; an import may only point down (docs/development/architecture.md):
 *   bin, bench, worker, api, cli   entry points and adapters (HTTP, the worker process, the CLI)
 *   activities                     what Temporal runs on workers: sandbox, tools, model calls
 *   services                       one home per feature: the rules, used by routes and activities
 *   workflows                      deterministic code; its *-contract.ts modules are shared definitions
 *   db, infra                      SQL behind named functions; process-level infrastructure
 *   core                           pure domain: types, schemas, rules, no I/O of its own
 */
const below = (...layers) => layers.map((l) => `./${l}`);
const zone = (target, from, message) => ({ target: `./${target}`, from, message });
const LAYER_ZONES = [
  zone(
    'core',
    below('db', 'infra', 'workflows', 'services', 'activities', 'api', 'worker', 'cli', 'bin'),
    'core/ is the bottom layer: pure domain, imports no other layer.',
  ),
  zone(
    'db',
    below('infra', 'workflows', 'services', 'activities', 'api', 'worker', 'cli', 'bin'),
    'db/ imports only core/.',
  ),
  zone(
    'infra',
    below('services', 'activities', 'api', 'worker', 'cli', 'bin'),
    'infra/ imports only core/, db/ and workflow contracts.',
  ),
  zone(
    'workflows',
    below('db', 'infra', 'services', 'api', 'worker', 'cli', 'bin'),
    'Workflows are deterministic: core/ and workflow modules only (activities as types).',
  ),
  zone(
    'services',
    below('activities', 'api', 'worker', 'cli', 'bin'),
    'services/ is used by routes and activities; it imports neither.',
  ),
  zone('activities', below('api', 'worker', 'cli', 'bin'), 'Activities never import the API or the worker process.'),
  zone(
    'api',
    below('activities', 'worker', 'cli', 'bin'),
    'The API calls services/; it imports no activity and no worker code.',
  ),
  zone(
    'cli',
    below('db', 'infra', 'workflows', 'services', 'activities', 'api', 'worker', 'bin'),
    'The CLI is a client of the HTTP API only.',
  ),
  zone('worker', below('api', 'cli', 'bin'), 'The worker process imports no API or CLI code.'),
];

/**
 * A db/ module that only reads is named `*-reads.ts` (with the row shapes of db/rows/); any other
 * db/ module may write. The API reads through the read modules and writes only through services/,
 * and a read module builds on read modules only (docs/development/architecture.md).
 */
const DB_READS = ['**/db/*-reads.ts', '**/db/rows/**'];
const READ_ZONES = [
  {
    target: './api',
    from: './db/**',
    except: DB_READS,
    message:
      'api/ imports from db/ only its *-reads.ts modules and db/rows/: a write goes through a service of services/.',
  },
  {
    target: './db/*-reads.ts',
    from: './db/**',
    except: DB_READS,
    message: 'A *-reads.ts module only reads: it imports only other read modules and db/rows/.',
  },
];
/** SQL that changes something (or locks for a change): none of it in a *-reads.ts module. */
const WRITE_SQL = String.raw`/\b(INSERT|UPDATE|DELETE|TRUNCATE|MERGE|UPSERT)\b|ON CONFLICT|pg_notify|nextval|setval/`;

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.data/**', 'workflow-bundle.js', '*.mjs'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })] },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      // Type-only imports count: a cycle of types is a cycle of meaning.
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
    },
  },
  {
    files: [
      'core/**/*.ts',
      'db/**/*.ts',
      'infra/**/*.ts',
      'workflows/**/*.ts',
      'services/**/*.ts',
      'activities/**/*.ts',
      'api/**/*.ts',
      'cli/**/*.ts',
      'worker/**/*.ts',
    ],
    rules: { 'import-x/no-restricted-paths': ['error', { zones: [...LAYER_ZONES, ...READ_ZONES] }] },
  },
  {
    files: ['db/*-reads.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        ...['TemplateElement[value.raw', 'Literal[value'].map((node) => ({
          selector: `${node}=${WRITE_SQL}]`,
          message: 'A *-reads.ts module only reads: put this statement in a db/ module that writes.',
        })),
      ],
    },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no database, no Node built-ins.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                'typeorm',
                'pg',
                'node:*',
                // Node's built-ins by their bare names too.
                'fs',
                'fs/*',
                'child_process',
                'net',
                'http',
                'https',
                'os',
                'crypto',
                'openai',
                '@temporalio/worker',
                '@temporalio/client',
                '@temporalio/activity',
              ],
              message: 'Workflows must stay deterministic; do this in an activity.',
            },
            {
              // At any depth (workflows/run/ imports ../../core/...), and what lives below them.
              group: ['**/core/metrics', '**/core/metrics/*', '**/core/logger', '**/core/config', '**/core/config/*'],
              message: 'Workflows import nothing with side effects.',
            },
          ],
        },
      ],
    },
  },
  {
    // The web console's browser modules put what runs wrote on the page as text only.
    files: ['api/console/assets/**/*.js'],
    rules: {
      'no-restricted-properties': [
        'error',
        ...['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'write', 'writeln'].map((property) => ({
          property,
          message: 'The console inserts text, never HTML: build elements with h() of api/console/assets/api.js.',
        })),
      ],
      'no-eval': 'error',
      'no-implied-eval': 'error',
    },
  },
  prettier,
);
