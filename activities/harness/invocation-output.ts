import { chmod, chown, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { harnessOutputDir, legacyHarnessOutputDir } from '../workspace/workspace-paths';

/** One invocation's standard output on disk: `t<turn>-s<step>-i<attempt>.jsonl`. */
export interface InvocationOutput {
  path: string;
  turn: number;
  step: number;
  /** HarnessTranscript's attempt key: the step's attempt, `r` added for a replacement session. */
  attempt: string;
}

const NAME = /^t(\d{1,9})-s(\d{1,9})-i(\d{1,9}r?)\.jsonl$/;

/** Outputs of invocations this process runs now: never left over, whatever a retry finds. */
const inUse = new Set<string>();

/**
 * Makes the empty file a CLI's standard output goes to (RunProcessOptions.stdoutFile), in use
 * until `releaseInvocationOutput`. The run's spawn server opens it as the uid of the run's
 * processes (`ownerUid`, when the worker runs as root), so the file is theirs, readable and
 * writable by that uid only (and by the worker); the directories are the worker's, traversable,
 * not listable.
 */
export async function createInvocationOutput(
  root: string,
  runId: string,
  at: Omit<InvocationOutput, 'path'>,
  ownerUid?: number,
): Promise<InvocationOutput> {
  const dir = harnessOutputDir(root, runId);
  await mkdir(dir, { recursive: true, mode: 0o711 });
  await chmod(path.dirname(dir), 0o711);
  await chmod(dir, 0o711);
  const file = path.join(dir, `t${at.turn}-s${at.step}-i${at.attempt}.jsonl`);
  inUse.add(file);
  try {
    await writeFile(file, '', { mode: 0o600 });
    await chmod(file, 0o600);
    if (ownerUid !== undefined) await chown(file, ownerUid, ownerUid);
  } catch (err) {
    inUse.delete(file);
    throw err;
  }
  return { path: file, ...at };
}

/** The invocation has ended: its output is removed once recorded, else left for the next attempt. */
export async function releaseInvocationOutput(output: InvocationOutput, recorded: boolean): Promise<void> {
  try {
    if (recorded) await removeInvocationOutput(output);
  } finally {
    inUse.delete(output.path);
  }
}

/**
 * Outputs of the run's invocations that are still on disk, in the order they ran: what an
 * attempt whose worker died left (not those of invocations this process is running).
 */
export async function leftOverOutputs(root: string, runId: string): Promise<InvocationOutput[]> {
  const outputs: InvocationOutput[] = [];
  // Outputs a worker from before they moved into the run's state left are read from their old place.
  for (const dir of [legacyHarnessOutputDir(root, runId), harnessOutputDir(root, runId)]) {
    const names = await readdir(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [];
      throw err;
    });
    for (const name of names) {
      const match = NAME.exec(name);
      if (match && !inUse.has(path.join(dir, name))) {
        outputs.push({
          path: path.join(dir, name),
          turn: Number(match[1]),
          step: Number(match[2]),
          attempt: match[3]!,
        });
      }
    }
  }
  const attemptOrder = (a: string) => [parseInt(a, 10), a.endsWith('r') ? 1 : 0] as const;
  return outputs.sort((a, b) => {
    const [na, ra] = attemptOrder(a.attempt);
    const [nb, rb] = attemptOrder(b.attempt);
    return a.turn - b.turn || a.step - b.step || na - nb || ra - rb;
  });
}

export async function removeInvocationOutput(output: InvocationOutput): Promise<void> {
  await rm(output.path, { force: true });
}
