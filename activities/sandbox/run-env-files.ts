import { createHmac, randomBytes } from 'node:crypto';
import { chown, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** Files kept per run beyond those in use: a run's commands share one or two; a harness's tokens make one per step. */
const KEPT_PER_RUN = 8;

interface EnvFile {
  written: Promise<string>;
  /** Prepared processes that have not been released yet. */
  users: number;
}

/**
 * The files that hand a run's sandboxes their environment (sandbox-init `-env`), one per distinct
 * content and run: a run's commands mostly share one, which is then written once instead of
 * written, chowned and removed around every command. Unused ones beyond a few are removed; the
 * rest go with the run's directory.
 */
export class RunEnvFiles {
  private readonly runs = new Map<string, Map<string, EnvFile>>();
  /** Names say nothing of the content, even to one who could guess it. */
  private readonly salt = randomBytes(32);

  constructor(private readonly hostUid: number | undefined) {}

  /** A file in `envDir` that holds `content`, readable by the sandbox uid only, until `release`. */
  async acquire(runId: string, envDir: string, content: string): Promise<{ file: string; release(): void }> {
    let files = this.runs.get(runId);
    if (!files) this.runs.set(runId, (files = new Map()));
    const name = createHmac('sha256', this.salt).update(content).digest('base64url').slice(0, 32);
    let entry = files.get(name);
    let removed: Promise<void> | undefined;
    if (!entry) {
      const run = files;
      const written = this.write(path.join(envDir, name), content);
      written.catch(() => run.delete(name));
      entry = { written, users: 0 };
      files.set(name, entry);
      removed = this.removeUnused(files);
    }
    entry.users += 1;
    const used = entry;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      used.users -= 1;
    };
    try {
      const file = await entry.written;
      await removed;
      return { file, release };
    } catch (err) {
      release();
      throw err;
    }
  }

  forget(runId: string): void {
    this.runs.delete(runId);
  }

  /** Removes the oldest unused files beyond KEPT_PER_RUN. */
  private async removeUnused(files: Map<string, EnvFile>): Promise<void> {
    const removals: Promise<unknown>[] = [];
    for (const [name, entry] of files) {
      if (files.size <= KEPT_PER_RUN) break;
      if (entry.users > 0) continue;
      files.delete(name);
      removals.push(entry.written.then((file) => rm(file, { force: true })).catch(() => undefined));
    }
    await Promise.all(removals);
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
