import { constants } from 'node:fs';
import { mkdir, open } from 'node:fs/promises';
import path from 'node:path';
import { toProblem } from '../api-client';
import type { CommandContext } from '../context';
import { EXIT_CODES } from '../exit-codes';
import { getRun } from '../follow';
import { oneLine, terminalSafe } from '../terminal-text';
import type { ArtifactResponse } from '../wire';

/**
 * A file name the agent chose, made safe to create in the download directory: its last path
 * component, characters outside a plain set as `_`, no leading dots, never empty.
 */
export function safeFileName(name: string): string {
  const base = name.split(/[/\\]/).pop() ?? '';
  const plain = base
    .replace(/[^A-Za-z0-9._ -]/g, '_')
    .replace(/^[.\s]+/, '')
    .slice(0, 200);
  return plain || 'artifact';
}

/** `name` or, when taken, `name-2.ext`, `name-3.ext`… */
function unused(name: string, taken: Set<string>): string {
  const ext = path.extname(name);
  const stem = name.slice(0, name.length - ext.length);
  let candidate = name;
  for (let n = 2; taken.has(candidate); n++) candidate = `${stem}-${n}${ext}`;
  taken.add(candidate);
  return candidate;
}

/** Saves a signed URL's file to `target` (never through a symlink); returns its bytes. */
export async function download(url: string, target: string): Promise<number> {
  // Signed URLs need no key, so none is sent: the URL may point at another host (PUBLIC_URL).
  const res = await fetch(url);
  if (!res.ok) throw await toProblem(res);
  const bytes = Buffer.from(await res.arrayBuffer());
  // Never through a symlink someone left in the directory.
  const file = await open(
    target,
    constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
    0o644,
  );
  try {
    await file.writeFile(bytes);
  } finally {
    await file.close();
  }
  return bytes.length;
}

const size = (bytes: number | undefined) =>
  bytes === undefined
    ? '?'
    : bytes < 1024
      ? `${bytes} B`
      : bytes < 1048576
        ? `${(bytes / 1024).toFixed(1)} KiB`
        : `${(bytes / 1048576).toFixed(1)} MiB`;

/** `agent-runs artifacts <id>`: the run's artifacts with their (expiring) download URLs; `--download <dir>` fetches them. */
export async function artifactsCommand(
  ctx: CommandContext,
  runId: string,
  options: { download?: string },
): Promise<number> {
  const run = await getRun(ctx.client, runId);
  const artifacts: (ArtifactResponse & { saved_to?: string })[] = [];
  // Files only: a plan has nothing to download (`agent-runs plan`), a reference is a URL already.
  for (const item of (run.artifacts ?? []).filter((a) => a.artifact_type === 'FILE')) {
    artifacts.push(
      await ctx.client.get<ArtifactResponse>(`/agent/artifacts/${encodeURIComponent(item.data.artifact_uid)}`),
    );
  }
  const { out } = ctx;
  if (options.download !== undefined) {
    await mkdir(options.download, { recursive: true });
    const taken = new Set<string>();
    for (const artifact of artifacts) {
      const target = path.join(options.download, unused(safeFileName(artifact.data.filename), taken));
      const bytes = await download(artifact.data.download_url, target);
      artifact.saved_to = target;
      out.note(`Saved ${target} (${size(bytes)})`);
    }
  }
  if (out.json) {
    out.document({ run_id: run.run_id, artifacts });
    return EXIT_CODES.ok;
  }
  const plans = (run.artifacts ?? []).filter((a) => a.artifact_type === 'PLAN');
  if (plans.length) out.note(`Run ${run.run_id} has a plan (version ${plans.length}): agent-runs plan ${run.run_id}`);
  if (artifacts.length === 0) out.note(`Run ${run.run_id} has no file artifacts.`);
  for (const a of artifacts) {
    const where = a.data.filepath ? `  ${oneLine(a.data.filepath, 120)}` : '';
    out.text(
      `${out.style('bold', oneLine(a.data.filename, 120))}  ${size(a.data.size_bytes)}${where}\n    ${terminalSafe(a.data.download_url)}${a.data.expires_at ? `  (until ${a.data.expires_at})` : ''}`,
    );
  }
  return EXIT_CODES.ok;
}
