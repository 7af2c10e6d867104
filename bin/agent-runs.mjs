#!/usr/bin/env node
// `agent-runs`, the command-line client (cli/). Runs the build (dist/cli/main.js) when there is
// one, else the TypeScript source through tsx: it works in a fresh clone, in an install from git
// or a tarball, and after `npm run build`. AGENT_RUNS_CLI_FROM_SOURCE=1 insists on the source
// (the tests set it, so that a stale dist/ never stands in for the code under test).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const built = new URL('../dist/cli/main.js', import.meta.url);
if (existsSync(built) && process.env.AGENT_RUNS_CLI_FROM_SOURCE !== '1') {
  require(built.pathname);
} else {
  require('tsx/cjs/api').require('../cli/main.ts', import.meta.url);
}
