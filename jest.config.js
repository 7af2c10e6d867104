/** @type {import('jest').Config} */
const transform = { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] };

module.exports = {
  maxWorkers: 2,
  // A global option (ignored inside projects): long enough for the stack's tests.
  testTimeout: 90_000,
  projects: [
    {
      // Pure logic: no PostgreSQL, no Temporal, no worker; seconds in all (`npm run test:unit`).
      displayName: 'unit',
      testEnvironment: 'node',
      roots: ['<rootDir>/test/unit'],
      testMatch: ['**/*.test.ts'],
      transform,
      globalSetup: '<rootDir>/test/stack/unit-global-setup.ts',
      globalTeardown: '<rootDir>/test/stack/unit-global-teardown.ts',
    },
    {
      // The whole service against one real PostgreSQL and one Temporal dev server for the run.
      displayName: 'stack',
      testEnvironment: 'node',
      roots: ['<rootDir>/test'],
      testMatch: ['<rootDir>/test/*.test.ts'],
      transform,
      globalSetup: '<rootDir>/test/stack/global-setup.ts',
      globalTeardown: '<rootDir>/test/stack/global-teardown.ts',
    },
  ],
};
