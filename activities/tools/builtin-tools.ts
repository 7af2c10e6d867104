import path from 'node:path';
import { exceeded as diskExceeded, RunDiskLimitError, type RunDiskQuota } from '../sandbox/run-disk';
import type { NetworkPolicy } from '../../core/network-policy';
import type { ArtifactFile } from '../../db/artifacts';
import type { ToolSpec } from '../model/types';
import type { NetworkRefusal } from '../sandbox/egress-proxy';
import { networkRefusalNotes } from '../sandbox/network-notes';
import { limitHint } from '../sandbox/sandbox';
import type { RunProcesses } from '../sandbox/sandboxed-process';
import type { WorkspaceFiles } from '../sandbox/workspace-files';
import { capText } from './output-capture';
import { traceToolCall } from './traced-tool-call';

/** What a tool call produced: the text the model sees, and what the transcript keeps. */
export interface ToolOutcome {
  output: string;
  isError: boolean;
  details?: {
    exit_code?: number | null;
    duration_ms?: number;
    timed_out?: boolean;
    full_output?: string;
    network_refusals?: NetworkRefusal[];
    interrupted?: boolean;
    artifact_uid?: string;
  };
  skillLoad?: { bundled_skill_id: string } | { skill_path: string };
}

export interface AdvertisedSkill {
  name: string;
  description: string;
  content: string;
  source: { bundled_skill_id: string } | { skill_path: string };
}

export interface ToolContext {
  /** The run's processes and files, each in the run's sandbox. */
  processes: RunProcesses;
  files: WorkspaceFiles;
  networkPolicy: NetworkPolicy;
  signal: AbortSignal;
  commandTimeoutSeconds: number;
  outputLimitBytes: number;
  skills: AdvertisedSkill[];
  /** Records a `FILE` artifact of this tool call (once, however often the call is retried). */
  recordArtifact?: (artifact: ArtifactUpload) => Promise<{ artifactUid: string }>;
  /** The run's disk limit: watched while a command runs, checked after a tool writes. */
  disk?: RunDiskQuota;
  /** The run's memory limit in MiB, for the note an OOM kill gets. */
  memoryLimitMb?: number;
}

/** A file `upload_artifact` read from the workspace. */
export type ArtifactUpload = ArtifactFile;

/** The largest file `upload_artifact` takes (documented in docs/guide/results.md). */
export const MAX_ARTIFACT_BYTES = 10 * 1024 * 1024;

const str = (description: string) => ({ type: 'string', description });
const int = (description: string) => ({ type: 'integer', description });

export const BUILTIN_TOOLS: ToolSpec[] = [
  {
    name: 'run_command',
    description:
      'Run a shell command (bash -c) in the workspace. Returns exit code and combined stdout/stderr (long output is cut in the middle). The command is killed on timeout.',
    parameters: {
      type: 'object',
      properties: {
        command: str('The command line to run.'),
        cwd: str('Working directory relative to the workspace root (default: the root).'),
        timeout_seconds: int('Timeout in seconds (default and maximum set by the service).'),
      },
      required: ['command'],
      additionalProperties: false,
    },
  },
  {
    name: 'read_file',
    description: 'Read a text file of the workspace. Optionally a range of lines (1-based).',
    parameters: {
      type: 'object',
      properties: {
        path: str('File path relative to the workspace root.'),
        start_line: int('First line (1-based).'),
        end_line: int('Last line.'),
      },
      required: ['path'],
      additionalProperties: false,
    },
  },
  {
    name: 'write_file',
    description: 'Create or overwrite a file in the workspace with the given content (directories are created).',
    parameters: {
      type: 'object',
      properties: { path: str('File path relative to the workspace root.'), content: str('The complete new content.') },
      required: ['path', 'content'],
      additionalProperties: false,
    },
  },
  {
    name: 'edit_file',
    description:
      'Replace text in a workspace file. old_text must occur exactly once unless replace_all is true. Include enough context to make it unique.',
    parameters: {
      type: 'object',
      properties: {
        path: str('File path relative to the workspace root.'),
        old_text: str('The exact text to replace.'),
        new_text: str('The replacement text.'),
        replace_all: { type: 'boolean', description: 'Replace every occurrence.' },
      },
      required: ['path', 'old_text', 'new_text'],
      additionalProperties: false,
    },
  },
  {
    name: 'list_directory',
    description: 'List a directory of the workspace (directories end with /). .git directories are not shown.',
    parameters: {
      type: 'object',
      properties: { path: str('Directory relative to the workspace root (default: the root).') },
      additionalProperties: false,
    },
  },
  {
    name: 'upload_artifact',
    description: `Upload a file of the workspace as an artifact of this run, so that the user can download it (at most ${MAX_ARTIFACT_BYTES / (1024 * 1024)} MiB).`,
    parameters: {
      type: 'object',
      properties: {
        filepath: str('File path relative to the workspace root.'),
        description: str('What the file is, for the user (optional).'),
        title: str('A short label for the artifact (optional).'),
      },
      required: ['filepath'],
      additionalProperties: false,
    },
  },
  {
    name: 'read_skill',
    description: 'Load one of the skills listed in the system prompt by its name, and follow its instructions.',
    parameters: {
      type: 'object',
      properties: { name: str('The skill name as listed.') },
      required: ['name'],
      additionalProperties: false,
    },
  },
];

export const BUILTIN_TOOL_NAMES = new Set(BUILTIN_TOOLS.map((t) => t.name));

class ToolInputError extends Error {}

function stringArg(args: Record<string, unknown>, name: string, required = true): string {
  const value = args[name];
  if (value === undefined && !required) return '';
  if (typeof value !== 'string') throw new ToolInputError(`\`${name}\` must be a string`);
  return value;
}

function numberArg(args: Record<string, unknown>, name: string): number | undefined {
  const value = args[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new ToolInputError(`\`${name}\` must be a number`);
  return value;
}

/** Runs one built-in tool; errors the model can act on come back as outcomes, not exceptions. */
export function runBuiltinTool(name: string, args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutcome> {
  return traceToolCall(name, 'builtin', () => runTool(name, args, ctx));
}

async function runTool(name: string, args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutcome> {
  try {
    switch (name) {
      case 'run_command':
        return await runCommand(args, ctx);
      case 'read_file': {
        const text = await ctx.files.read(stringArg(args, 'path'));
        const start = numberArg(args, 'start_line');
        const end = numberArg(args, 'end_line');
        const selected =
          start || end
            ? text
                .split('\n')
                .slice((start ?? 1) - 1, end)
                .join('\n')
            : text;
        return { output: capText(selected, ctx.outputLimitBytes), isError: false };
      }
      case 'write_file': {
        const file = stringArg(args, 'path');
        const bytes = await ctx.files.write(file, stringArg(args, 'content'));
        await ctx.disk?.check();
        return { output: `Wrote ${bytes} bytes to ${relativeName(ctx, file)}.`, isError: false };
      }
      case 'edit_file': {
        const outcome = await editFile(args, ctx);
        await ctx.disk?.check();
        return outcome;
      }
      case 'list_directory': {
        const entries = (await ctx.files.list(stringArg(args, 'path', false)))
          .filter((e) => e.name !== '.git')
          .map((e) => (e.dir ? `${e.name}/` : e.name))
          .sort();
        return { output: entries.length ? entries.join('\n') : '(empty directory)', isError: false };
      }
      case 'upload_artifact':
        return await uploadArtifact(args, ctx);
      case 'read_skill': {
        const wanted = stringArg(args, 'name');
        const skill = ctx.skills.find(
          (s) => s.name === wanted || ('bundled_skill_id' in s.source && s.source.bundled_skill_id === wanted),
        );
        if (!skill) {
          return {
            output: `No skill named ${wanted}. Available: ${ctx.skills.map((s) => s.name).join(', ') || 'none'}.`,
            isError: true,
          };
        }
        return { output: skill.content, isError: false, skillLoad: skill.source };
      }
      default:
        return { output: `Unknown tool ${name}.`, isError: true };
    }
  } catch (err) {
    // A limit of the run ends it; the model is not asked to work around it.
    if (ctx.signal.aborted || err instanceof RunDiskLimitError) throw err;
    const message = err instanceof Error ? err.message : String(err);
    return { output: `${name} failed: ${message}`, isError: true };
  }
}

async function runCommand(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutcome> {
  const command = stringArg(args, 'command');
  const cwdArg = stringArg(args, 'cwd', false);
  const cwd = cwdArg ? workspaceRelative(ctx, cwdArg) : '';
  if (cwd === undefined || !(await ctx.files.isDirectory(cwd)))
    throw new ToolInputError(`cwd ${cwdArg} is not a directory of the workspace`);
  const requested = numberArg(args, 'timeout_seconds');
  const timeoutSeconds = Math.max(1, Math.min(requested ?? ctx.commandTimeoutSeconds, ctx.commandTimeoutSeconds));
  const result = await ctx.processes.runCommand({
    command,
    cwd,
    policy: ctx.networkPolicy,
    timeoutMs: timeoutSeconds * 1000,
    signal: ctx.signal,
    keepBytes: Math.max(ctx.outputLimitBytes, 1024 * 1024),
    disk: ctx.disk,
  });
  if (result.diskLimitExceeded !== undefined) throw diskExceeded(result.diskLimitExceeded, ctx.disk!.maxBytes);
  if (result.cancelled) throw new Error('command cancelled');
  await ctx.disk?.check();
  const status = result.timedOut
    ? `Timed out after ${timeoutSeconds}s; the command and its children were killed.`
    : `Exit code ${result.exitCode ?? `signal ${result.signal}`} in ${result.durationMs} ms.`;
  const failed = result.timedOut || result.exitCode !== 0;
  const hint = result.oomKilled
    ? `The kernel killed a process of this command: the run's processes together reached their memory limit of ${ctx.memoryLimitMb ?? '?'} MiB (AGENT_SANDBOX_MEMORY_MB).`
    : failed
      ? limitHint(result.exitCode, result.output)
      : undefined;
  const notes = networkRefusalNotes(result.refusals) + (hint ? `\n[sandbox] ${hint}` : '');
  return {
    output: `${status}\n${capText(result.output, ctx.outputLimitBytes)}${notes}`,
    isError: failed,
    details: {
      exit_code: result.exitCode,
      duration_ms: result.durationMs,
      timed_out: result.timedOut,
      full_output: result.output + notes,
      ...(result.refusals.length ? { network_refusals: result.refusals } : {}),
    },
  };
}

async function editFile(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutcome> {
  const file = stringArg(args, 'path');
  const oldText = stringArg(args, 'old_text');
  const newText = stringArg(args, 'new_text');
  if (!oldText) throw new ToolInputError('`old_text` must not be empty; use write_file to create a file');
  const text = await ctx.files.read(file);
  const count = text.split(oldText).length - 1;
  if (count === 0) return { output: `old_text was not found in ${args.path as string}.`, isError: true };
  if (count > 1 && args.replace_all !== true) {
    return {
      output: `old_text occurs ${count} times in ${args.path as string}; add context or set replace_all.`,
      isError: true,
    };
  }
  await ctx.files.write(
    file,
    args.replace_all === true ? text.split(oldText).join(newText) : text.replace(oldText, () => newText),
  );
  return {
    output: `Replaced ${args.replace_all === true ? count : 1} occurrence(s) in ${args.path as string}.`,
    isError: false,
  };
}

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

function optionalText(args: Record<string, unknown>, name: string, max: number): string | undefined {
  const value = args[name];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new ToolInputError(`\`${name}\` must be a string`);
  if (value.length > max) throw new ToolInputError(`\`${name}\` is at most ${max} characters`);
  // PostgreSQL text cannot hold NUL.
  return value.replace(/\u0000/g, '');
}

/** Reads the file through the sandbox (so a symlink cannot lead out) and records it as an artifact. */
async function uploadArtifact(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutcome> {
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

/** A path the model gave, relative to the workspace root; undefined when it points outside. */
function workspaceRelative(ctx: ToolContext, requested: string): string | undefined {
  const root = ctx.processes.workspacePath;
  const absolute = path.posix.resolve(root, requested);
  if (absolute !== root && !absolute.startsWith(`${root}/`)) return undefined;
  return path.posix.relative(root, absolute);
}

function relativeName(ctx: ToolContext, requested: string): string {
  return workspaceRelative(ctx, requested) ?? requested;
}
