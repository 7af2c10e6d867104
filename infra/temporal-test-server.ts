import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Temporal's time-skipping test server (Maven Central `io.temporal:temporal-test-server`, run
 * with the machine's Java), for `TestWorkflowEnvironment.createTimeSkipping` in the workflow
 * tests. The SDK would download a native build from the internet; Maven Central is reachable
 * where that is not (and it is what `.ci/run` installs from).
 */
export const TEMPORAL_TEST_SERVER_VERSION = '1.31.0';

const COMPLETE_MARKER = '.agent-runs-complete';

const POM = `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>agent-runs</groupId>
  <artifactId>temporal-test-server-classpath</artifactId>
  <version>1</version>
  <dependencies>
    <dependency>
      <groupId>io.temporal</groupId>
      <artifactId>temporal-test-server</artifactId>
      <version>${TEMPORAL_TEST_SERVER_VERSION}</version>
    </dependency>
  </dependencies>
</project>
`;

/**
 * An executable that starts the test server on the port it is given (what the SDK's
 * `existing-path` executable must be), made once per machine in the cache under
 * `agent-runs/temporal-test-server/<version>`: Maven resolves the jars, the script runs them.
 */
export async function ensureTemporalTestServer(): Promise<string> {
  const cache = process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache');
  const dir = path.join(cache, 'agent-runs', 'temporal-test-server', TEMPORAL_TEST_SERVER_VERSION);
  const script = path.join(dir, 'temporal-test-server');
  if (existsSync(path.join(dir, COMPLETE_MARKER))) return script;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'pom.xml'), POM);
  const classpathFile = path.join(dir, 'classpath.txt');
  try {
    await run('mvn', ['-q', '-B', 'dependency:build-classpath', `-Dmdep.outputFile=${classpathFile}`], {
      cwd: dir,
      timeout: 600_000,
    });
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    throw new Error(
      `Maven could not resolve io.temporal:temporal-test-server:${TEMPORAL_TEST_SERVER_VERSION} (needs mvn, Java 11+ and Maven Central): ${stdout ?? ''}${stderr ?? (err as Error).message}`,
    );
  }
  const classpath = readFileSync(classpathFile, 'utf8').trim();
  const quoted = `'${classpath.replace(/'/g, `'\\''`)}'`;
  writeFileSync(script, `#!/bin/sh\nexec java -cp ${quoted} io.temporal.testserver.TestServer "$@"\n`);
  chmodSync(script, 0o755);
  writeFileSync(path.join(dir, COMPLETE_MARKER), `${TEMPORAL_TEST_SERVER_VERSION}\n`);
  return script;
}
