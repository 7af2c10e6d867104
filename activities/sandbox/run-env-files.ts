import { createHash, randomBytes } from 'node:crypto';
import { chown, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * The files that hand a run's sandboxes their environment (sandbox-init `-env`), one per distinct
 * content and run: a run's commands mostly share one, which is then written once instead of
 * written, chowned and removed around every command. They go with the run's directory.
 */
export class RunEnvFiles {
  private readonly written = new Map<string, Map<string, Promise<string>>>();

  constructor(private readonly hostUid: number | undefined) {}

  /** A file in `envDir` that holds `content`, readable by the sandbox uid only; written the first time. */
  fileFor(runId: string, envDir: string, content: string): Promise<string> {
    let ofRun = this.written.get(runId);
    if (!ofRun) this.written.set(runId, (ofRun = new Map()));
    const name = createHash('sha256').update(content).digest('base64url').slice(0, 32);
    let file = ofRun.get(name);
    if (!file) {
      const run = ofRun;
      file = this.write(path.join(envDir, name), content);
      file.catch(() => run.delete(name));
      run.set(name, file);
    }
    return file;
  }

  forget(runId: string): void {
    this.written.delete(runId);
  }

  private async write(file: string, content: string): Promise<string> {
    // Complete or absent: a sandbox never reads half a file.
    const temp = `${file}.${randomBytes(6).toString('base64url')}`;
    await writeFile(temp, content, { mode: 0o400 });
    if (this.hostUid !== undefined) await chown(temp, this.hostUid, this.hostUid);
    await rename(temp, file);
    return file;
  }
}
