import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import prettier from 'eslint-config-prettier';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.data/**', 'workflow-bundle.js', '*.mjs'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { 'import-x': importX },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'import-x/no-cycle': 'error',
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
                'openai',
                '@temporalio/worker',
                '@temporalio/client',
                '@temporalio/activity',
              ],
              message: 'Workflows must stay deterministic; do this in an activity.',
            },
            { group: ['../db/*', '../api/*', '../infra/*'], message: 'Workflows import activities as types only.' },
          ],
        },
      ],
    },
  },
  prettier,
);
