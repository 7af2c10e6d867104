import { Session } from 'node:inspector/promises';
import { writeFile } from 'node:fs/promises';

/**
 * Runs `work` under V8's CPU profiler (this process's main thread) and writes the profile to
 * `file` (open it in Chrome DevTools or speedscope). The sampling interval is V8's default.
 */
export async function profileTo<T>(file: string, work: () => Promise<T>): Promise<T> {
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
    const result = await work();
    const { profile } = await session.post('Profiler.stop');
    await writeFile(file, JSON.stringify(profile));
    return result;
  } finally {
    session.disconnect();
  }
}
