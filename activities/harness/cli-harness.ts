import type { CliHarnessType } from '../../core/harnesses';
import type { McpServerConfig } from '../../core/run-types';

/** What one invocation of a CLI is asked to do. */
export interface CliTurn {
  /** The user message of this invocation: the prompt, or the follow-ups since the last one. */
  prompt: string;
  /** Instructions before the conversation (the run's base prompt and skill), if any. */
  instructions?: string;
  /** The CLI session to continue; absent on the run's first invocation (a fork's continues its source's). */
  resumeSession?: string;
  /**
   * `resumeSession` is another run's (a fork continues its source's): continued under a new id
   * where the CLI can, so that no two runs' sessions share one.
   */
  forkSession?: boolean;
  /** A session id for CLIs that let the caller choose it (the first invocation's). */
  newSessionId: string;
  model?: string;
  reasoningLevel?: string;
  /** The most model calls the CLI may make in this invocation, where it has such a limit. */
  maxTurns?: number;
  /** The model gateway's base URL as the sandboxed CLI reaches it, and the run's token for it. */
  gatewayUrl: string;
  token: string;
  mcpServers: Record<string, McpServerConfig>;
  /** Skills to install where the CLI discovers them: name → SKILL.md content. */
  skills: { name: string; content: string }[];
  /** The run's home and workspace as the sandboxed CLI sees them. */
  home: string;
  workspace: string;
  /** The run's memory limit (AGENT_SANDBOX_MEMORY_MB), for a runtime that can be told to keep within it. */
  memoryMb: number;
  /**
   * Set when `config.approval` gates the run's tool calls: a directory the worker writes (the
   * invocation's `readonlyFiles`) and binds read-only at the same path, and the node binary the
   * sandbox can run, for the CLI's hook that asks the gateway about each call.
   */
  approvalHook?: { dir: string; nodePath: string };
}

/** How to start the CLI: its command line, environment and the files it reads (under the run's home). */
export interface CliInvocation {
  argv: [string, ...string[]];
  env: Record<string, string>;
  /** Written before the CLI starts, relative to the run's home (settings, MCP configuration, skills). */
  homeFiles: Record<string, string>;
  /** Written by the worker into `CliTurn.approvalHook.dir`, read-only to the run (its approval hook). */
  readonlyFiles?: Record<string, string>;
}

/** One thing the CLI reported, in the transcript's terms. */
export type HarnessEntry =
  | { kind: 'session'; sessionId: string; model?: string }
  | {
      kind: 'assistant';
      text: string;
      toolCalls: { id: string; name: string; arguments: Record<string, unknown> }[];
      model?: string;
    }
  | { kind: 'tool_started'; toolCallId: string; name: string; input: Record<string, unknown> }
  | {
      kind: 'tool_result';
      toolCallId: string;
      name: string;
      input: Record<string, unknown>;
      output: string;
      isError: boolean;
      exitCode?: number | null;
    }
  /** The CLI's own cumulative usage for the invocation, in its native categories. */
  | { kind: 'usage'; usage: Record<string, number>; costUsd?: number; model?: string }
  | { kind: 'error'; message: string }
  | { kind: 'notice'; message: string; level?: 'warning' }
  | { kind: 'result'; text?: string; isError: boolean };

/** Reads a CLI's JSON event lines, one at a time, keeping what spans lines (pending tool calls). */
export interface EventTranslator {
  line(event: Record<string, unknown>): HarnessEntry[];
}

/** Where a CLI is installed on this worker: the program to run and the host paths it needs read-only. */
export interface CliInstall {
  version: string;
  /** The program and leading arguments (e.g. `node gemini.js`). */
  command: string[];
  readonlyPaths: string[];
}

export interface CliHarness {
  readonly type: CliHarnessType;
  /** The CLI as installed with the service; undefined (with why) when it is not on this worker. */
  locate(): CliInstall | { missing: string };
  invocation(install: CliInstall, turn: CliTurn): CliInvocation;
  translator(): EventTranslator;
}

/** Environment every CLI gets: no telemetry, no update checks, no colour. */
export const QUIET_ENVIRONMENT: Record<string, string> = {
  NO_COLOR: '1',
  DISABLE_TELEMETRY: '1',
  DO_NOT_TRACK: '1',
};

export const asRecord = (v: unknown): Record<string, unknown> =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

export const asText = (v: unknown): string =>
  typeof v === 'string'
    ? v
    : Array.isArray(v)
      ? v.map((p) => (typeof p === 'string' ? p : String(asRecord(p).text ?? ''))).join('\n')
      : v === undefined || v === null
        ? ''
        : JSON.stringify(v);
