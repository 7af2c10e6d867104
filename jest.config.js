/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  globalSetup: '<rootDir>/test/stack/global-setup.ts',
  globalTeardown: '<rootDir>/test/stack/global-teardown.ts',
  testTimeout: 90_000,
  maxWorkers: 2,
};
