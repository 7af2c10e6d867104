import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * sandbox-init's own Go tests (activities/sandbox/sandbox-init/*_test.go: the watcher's dirty set
 * and event parsing, delta checkpoints against the full walk, the index, open writers), run
 * with the Go that builds it.
 */
test('the Go tests of sandbox-init pass', async () => {
  const result = await promisify(execFile)('go', ['test', '-count=1', './...'], {
    cwd: path.join(__dirname, '../../activities/sandbox/sandbox-init'),
    env: { ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' },
    timeout: 300_000,
  }).catch((err: { stdout?: string; stderr?: string; message: string }) => ({
    stdout: `${err.stdout ?? ''}${err.stderr ?? ''}`,
    failed: err.message,
  }));
  // On failure, what Go printed is the message.
  expect('failed' in result ? `${result.failed}\n${result.stdout}` : '').toBe('');
}, 320_000);
