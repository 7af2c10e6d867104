import { HOST_PATH } from './host-root';
import { forkLauncher, type ProcessLauncher } from './launched-process';

export class HostCommandError extends Error {
  override name = 'HostCommandError';
  constructor(
    message: string,
    readonly stderr: string,
  ) {
    super(message);
  }
}

/**
 * Runs one of the worker's own programs on the host (mkfs, mount) as the worker's user, with the
 * host's fixed PATH and nothing else of its environment; resolves with its standard output,
 * rejects with its standard error when it fails or outlives `timeoutMs`.
 */
export function runHostCommand(
  file: string,
  args: string[],
  options: { launch?: ProcessLauncher; timeoutMs?: number } = {},
): Promise<string> {
  const { launch = forkLauncher, timeoutMs = 60_000 } = options;
  return new Promise((resolve, reject) => {
    const child = launch(file, args, { cwd: '/', env: { PATH: HOST_PATH } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout = (stdout + chunk.toString('utf8')).slice(-64 * 1024)));
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-16 * 1024)));
    const timer = setTimeout(() => child.signal('SIGKILL'), timeoutMs);
    child.once('error', (err: Error) => {
      clearTimeout(timer);
      reject(new HostCommandError(`${file} could not start: ${err.message}`, ''));
    });
    child.once('close', (code: number | null, signal: string | null) => {
      clearTimeout(timer);
      if (code === 0) return resolve(stdout);
      const why = signal ? `was killed (${signal})` : `exited ${code}`;
      reject(new HostCommandError(`${file} ${args.join(' ')} ${why}: ${stderr.trim().slice(0, 2000)}`, stderr));
    });
  });
}
