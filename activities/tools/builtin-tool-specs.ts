import type { ToolSpec } from '../model/types';
import { MAX_ARTIFACT_BYTES } from './upload-artifact-tool';
import { SUBMIT_PLAN_SPEC } from './submit-plan-tool';
import { OPEN_PULL_REQUEST_SPEC } from './open-pull-request-tool';

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
    name: 'report_external_reference',
    description:
      "Report something this run made outside the workspace (a pull request, an issue, a document) by its URL, so the user finds it among the run's artifacts and can look the run up by it.",
    parameters: {
      type: 'object',
      properties: {
        url: str('Its http(s) URL.'),
        reference_type: str('What it is, as a lowercase identifier: pull_request, issue, document… (default: link).'),
        title: str('A short label (optional).'),
      },
      required: ['url'],
      additionalProperties: false,
    },
  },
  {
    name: 'ask_user',
    description:
      'Ask the user a question and wait for the answer (it may take hours). Only when you cannot go on without it: a choice only they can make, or something you cannot find out yourself.',
    parameters: {
      type: 'object',
      properties: { question: str('The question, complete on its own.') },
      required: ['question'],
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

/**
 * Every built-in tool's name, `submit_plan` (offered only in plan mode) and `open_pull_request`
 * (only where the run delivers pull requests) included.
 */
export const BUILTIN_TOOL_NAMES = new Set(
  [...BUILTIN_TOOLS, SUBMIT_PLAN_SPEC, OPEN_PULL_REQUEST_SPEC].map((t) => t.name),
);
