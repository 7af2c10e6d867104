import path from 'node:path';
import type { McpServerConfig } from '../../core/run-types';
import {
  asRecord,
  asText,
  QUIET_ENVIRONMENT,
  type CliHarness,
  type EventTranslator,
  type HarnessEntry,
} from './cli-harness';
import { locatePackage } from './cli-install';

/**
 * Gemini CLI (`@google/gemini-cli`): `gemini -p` with `--output-format stream-json`, Gemini's
 * `streamGenerateContent` through the gateway, every tool approved (`--approval-mode yolo`),
 * `--session-id` chosen by us on the first invocation and `--resume` after it. It runs on the
 * worker's Node.
 */
export const geminiCli: CliHarness = {
  type: 'gemini',

  locate() {
    const pkg = locatePackage('@google/gemini-cli');
    if ('missing' in pkg) return pkg;
    return {
      version: pkg.version,
      command: [process.execPath, path.join(pkg.dir, 'bundle', 'gemini.js')],
      readonlyPaths: [pkg.dir],
    };
  },

  invocation(install, turn) {
    const prompt = turn.instructions && !turn.resumeSession ? `${turn.instructions}\n\n${turn.prompt}` : turn.prompt;
    const [node, ...script] = install.command;
    const argv = [
      node!,
      // Node sizes its heap from the host's memory (the run's cgroup is hidden from it): told the
      // run's limit, less a quarter for its native memory and what it runs, it collects garbage to
      // stay within it, and past it fails with its own "heap out of memory" (invocation-failure.ts).
      `--max-old-space-size=${Math.floor((turn.memoryMb * 3) / 4)}`,
      ...script,
      '-p',
      prompt,
      '--output-format',
      'stream-json',
      '--approval-mode',
      'yolo',
      ...(turn.resumeSession ? ['--resume', turn.resumeSession] : ['--session-id', turn.newSessionId]),
      ...(turn.model ? ['-m', turn.model] : []),
    ];
    const settings = {
      security: { auth: { selectedType: 'gemini-api-key' }, folderTrust: { enabled: false } },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
      general: { disableAutoUpdate: true, disableUpdateNag: true },
      ...(turn.maxTurns ? { model: { maxSessionTurns: turn.maxTurns } } : {}),
      ...(Object.keys(turn.mcpServers).length ? { mcpServers: mcpServersFor(turn.mcpServers) } : {}),
    };
    const homeFiles: Record<string, string> = { '.gemini/settings.json': JSON.stringify(settings, null, 2) };
    for (const skill of turn.skills) homeFiles[`.gemini/skills/${skill.name}/SKILL.md`] = skill.content;
    return {
      argv: argv as [string, ...string[]],
      env: {
        ...QUIET_ENVIRONMENT,
        GEMINI_API_KEY: turn.token,
        GOOGLE_GEMINI_BASE_URL: turn.gatewayUrl,
        GEMINI_CLI_NO_RELAUNCH: '1',
      },
      homeFiles,
    };
  },

  translator(): EventTranslator {
    let text = '';
    let model: string | undefined;
    const calls = new Map<string, { name: string; input: Record<string, unknown> }>();
    const flush = (
      toolCalls: { id: string; name: string; arguments: Record<string, unknown> }[] = [],
    ): HarnessEntry[] => {
      if (!text && !toolCalls.length) return [];
      const entry: HarnessEntry = { kind: 'assistant', text, toolCalls, ...(model ? { model } : {}) };
      text = '';
      return [entry];
    };
    return {
      line(event) {
        if (event.type === 'init' && typeof event.session_id === 'string') {
          model = typeof event.model === 'string' ? event.model : undefined;
          return [{ kind: 'session', sessionId: event.session_id, model }];
        }
        if (event.type === 'message' && event.role === 'assistant') {
          text += asText(event.content);
          return [];
        }
        if (event.type === 'tool_use') {
          const id = String(event.tool_id);
          const call = { id, name: String(event.tool_name), arguments: asRecord(event.parameters) };
          calls.set(id, { name: call.name, input: call.arguments });
          return [...flush([call]), { kind: 'tool_started', toolCallId: id, name: call.name, input: call.arguments }];
        }
        if (event.type === 'tool_result') {
          const id = String(event.tool_id);
          const call = calls.get(id);
          const failed = event.status !== 'success';
          const output = failed ? asText(asRecord(event.error).message ?? event.output) : asText(event.output);
          return [
            {
              kind: 'tool_result',
              toolCallId: id,
              name: call?.name ?? 'tool',
              input: call?.input ?? {},
              output,
              isError: failed,
            },
          ];
        }
        if (event.type === 'error') {
          return [
            ...flush(),
            { kind: event.severity === 'warning' ? 'notice' : 'error', message: asText(event.message) },
          ];
        }
        if (event.type === 'result') {
          const stats = asRecord(event.stats);
          const counts: Record<string, number> = {};
          for (const k of ['input_tokens', 'output_tokens', 'total_tokens', 'cached']) {
            if (typeof stats[k] === 'number') counts[k] = stats[k] as number;
          }
          const failed = event.status !== 'success';
          return [
            ...flush(),
            { kind: 'usage', usage: counts },
            ...(failed
              ? [{ kind: 'error' as const, message: asText(asRecord(event.error).message ?? 'the Gemini CLI failed') }]
              : []),
            { kind: 'result', isError: failed },
          ];
        }
        return [];
      },
    };
  },
};

function mcpServersFor(servers: Record<string, McpServerConfig>) {
  return Object.fromEntries(
    Object.entries(servers).map(([name, s]) => [
      name,
      s.url
        ? { httpUrl: s.url, ...(s.headers ? { headers: s.headers } : {}) }
        : { command: s.command, args: s.args ?? [], ...(s.env ? { env: s.env } : {}) },
    ]),
  );
}
