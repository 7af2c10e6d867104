import path from 'node:path';
import { optionalText, stringArg, ToolInputError, workspaceRelative } from './tool-arguments';
import type { ToolContext, ToolOutcome } from './tool-types';

/** The largest file `upload_artifact` takes (documented in docs/guide/results.md). */
export const MAX_ARTIFACT_BYTES = 10 * 1024 * 1024;

const MIME_TYPES: Record<string, string> = {
  txt: 'text/plain',
  md: 'text/markdown',
  csv: 'text/csv',
  log: 'text/plain',
  json: 'application/json',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  xml: 'application/xml',
  html: 'text/html',
  htm: 'text/html',
  css: 'text/css',
  js: 'text/javascript',
  ts: 'text/plain',
  py: 'text/x-python',
  diff: 'text/x-diff',
  patch: 'text/x-diff',
  pdf: 'application/pdf',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  svg: 'image/svg+xml',
  zip: 'application/zip',
  gz: 'application/gzip',
  tgz: 'application/gzip',
  tar: 'application/x-tar',
};

function mimeTypeOf(filename: string): string {
  const ext = /\.([A-Za-z0-9]+)$/.exec(filename)?.[1]?.toLowerCase();
  return (ext && MIME_TYPES[ext]) ?? 'application/octet-stream';
}

/** Reads the file through the sandbox (so a symlink cannot lead out) and records it as an artifact. */
export async function uploadArtifact(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutcome> {
  const requested = stringArg(args, 'filepath');
  const filepath = workspaceRelative(ctx, requested);
  if (filepath === undefined || filepath === '') throw new ToolInputError(`${requested} is outside the workspace`);
  if (!ctx.recordArtifact) throw new ToolInputError('artifacts cannot be recorded here');
  const description = optionalText(args, 'description', 2000);
  const title = optionalText(args, 'title', 200);
  const bytes = await ctx.files.readBytes(filepath, MAX_ARTIFACT_BYTES);
  const filename = path.posix.basename(filepath);
  const { artifactUid } = await ctx.recordArtifact({
    filepath,
    filename,
    mimeType: mimeTypeOf(filename),
    description,
    title,
    bytes,
  });
  return {
    output: `Uploaded ${filepath} (${bytes.length} bytes) as artifact ${artifactUid}.`,
    isError: false,
    details: { artifact_uid: artifactUid },
  };
}
