import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { existsInRoot } from './path-in-root';
import type { RunImageRoot } from './sandbox';

const RECORD = 'image.json';

/**
 * Each run's image root (null: the host's), as provisioning recorded it in the run's private
 * directory: kept in memory, and read back from there after a restart.
 */
export class RunImageRoots {
  private readonly known = new Map<string, RunImageRoot | null>();

  async record(runId: string, runDir: string, image: RunImageRoot | undefined): Promise<void> {
    const file = path.join(runDir, RECORD);
    if (image) await writeFile(file, JSON.stringify(image), { mode: 0o600 });
    else await rm(file, { force: true });
    this.known.set(runId, image ?? null);
  }

  /** The image root the run's commands get, if its environment has one. */
  async of(runId: string, runDir: string): Promise<RunImageRoot | undefined> {
    let image = this.known.get(runId);
    if (image === undefined) {
      const text = await readFile(path.join(runDir, RECORD), 'utf8').catch(() => undefined);
      image = text ? (JSON.parse(text) as RunImageRoot) : null;
      this.known.set(runId, image);
    }
    if (image && !existsSync(image.rootfs)) {
      throw new Error(`the image ${image.digest} of run ${runId} is no longer in this worker's image cache`);
    }
    return image ?? undefined;
  }

  forget(runId: string): void {
    this.known.delete(runId);
  }
}

/** The shell that runs commands on an image: bash, else sh. */
export async function imageShell(image: RunImageRoot): Promise<string> {
  for (const candidate of ['/bin/bash', '/usr/bin/bash', '/bin/sh', '/usr/bin/sh']) {
    if (await existsInRoot(image.rootfs, candidate)) return candidate;
  }
  throw new Error(
    `the environment's image (${image.digest}) has no shell (/bin/bash or /bin/sh), and commands run through one; add one to the image`,
  );
}
