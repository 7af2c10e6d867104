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
 * Claude Code (`@anthropic-ai/claude-code`): `claude -p` with `--output-format stream-json`,
 * the Anthropic Messages API through the gateway, every tool allowed (the sandbox is the
 * boundary), `--session-id` chosen by us on the first invocation and `--resume` after it (with
 * `--fork-session` for a fork's first, which continues its source's session under an id of its own).
 */
export const claudeCode: CliHarness = {
  type: 'claude',

  locate() {
    // The native binary of the platform's package; the main package's postinstall only copies it.
    const arch = process.arch === 'arm64' ? 'arm64' : 'x64';
    const musl = isMusl() ? '-musl' : '';
    const platform = locatePackage(`@anthropic-ai/claude-code-${process.platform}-${arch}${musl}`);
    if ('missing' in platform) return platform;
    return { version: platform.version, command: [path.join(platform.dir, 'claude')], readonlyPaths: [platform.dir] };
  },

  invocation(install, turn) {
    const argv = [
      ...install.command,
      '-p',
      turn.prompt,
      '--output-format',
      'stream-json',
      '--verbose',
      '--dangerously-skip-permissions',
      ...(turn.resumeSession
        ? ['--resume', turn.resumeSession, ...(turn.forkSession ? ['--fork-session'] : [])]
        : ['--session-id', turn.newSessionId]),
      ...(turn.model ? ['--model', turn.model] : []),
      ...(turn.maxTurns ? ['--max-turns', String(turn.maxTurns)] : []),
      ...(turn.instructions ? ['--append-system-prompt', turn.instructions] : []),
    ];
    const homeFiles: Record<string, string> = {};
    if (Object.keys(turn.mcpServers).length) {
      homeFiles['.agent-runs/claude-mcp.json'] = JSON.stringify({ mcpServers: mcpServersFor(turn.mcpServers) });
      argv.push('--mcp-config', path.posix.join(turn.home, '.agent-runs/claude-mcp.json'), '--strict-mcp-config');
    }
    for (const skill of turn.skills) homeFiles[`.claude/skills/${skill.name}/SKILL.md`] = skill.content;
    return {
      argv: argv as [string, ...string[]],
      env: {
        ...QUIET_ENVIRONMENT,
        ANTHROPIC_BASE_URL: turn.gatewayUrl,
        ANTHROPIC_API_KEY: turn.token,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_AUTOUPDATER: '1',
        DISABLE_ERROR_REPORTING: '1',
        DISABLE_BUG_COMMAND: '1',
        CLAUDE_CODE_DISABLE_TERMINAL_TITLE: '1',
        IS_SANDBOX: '1',
      },
      homeFiles,
    };
  },

  translator(): EventTranslator {
    const calls = new Map<string, { name: string; input: Record<string, unknown> }>();
    return {
      line(event) {
        const out: HarnessEntry[] = [];
        const message = asRecord(event.message);
        if (event.type === 'system' && event.subtype === 'init' && typeof event.session_id === 'string') {
          out.push({
            kind: 'session',
            sessionId: event.session_id,
            model: typeof event.model === 'string' ? event.model : undefined,
          });
        } else if (event.type === 'system' && event.subtype === 'api_retry') {
          const status =
            typeof event.error_status === 'number' ? `HTTP ${event.error_status}` : String(event.error ?? 'an error');
          out.push({
            kind: 'notice',
            message: `Claude Code retries its model call after ${status} (attempt ${String(event.attempt)} of ${String(event.max_retries)}).`,
          });
        } else if (event.type === 'assistant' && !event.parent_tool_use_id) {
          const blocks = Array.isArray(message.content) ? (message.content as Record<string, unknown>[]) : [];
          const text = blocks
            .filter((b) => b.type === 'text')
            .map((b) => String(b.text ?? ''))
            .join('');
          const toolCalls = blocks
            .filter((b) => b.type === 'tool_use')
            .map((b) => ({ id: String(b.id), name: String(b.name), arguments: asRecord(b.input) }));
          for (const c of toolCalls) calls.set(c.id, { name: c.name, input: c.arguments });
          if (text || toolCalls.length) {
            out.push({
              kind: 'assistant',
              text,
              toolCalls,
              model: typeof message.model === 'string' ? message.model : undefined,
            });
          }
        } else if (event.type === 'user' && !event.parent_tool_use_id) {
          const blocks = Array.isArray(message.content) ? (message.content as Record<string, unknown>[]) : [];
          for (const b of blocks.filter((x) => x.type === 'tool_result')) {
            const id = String(b.tool_use_id);
            const call = calls.get(id);
            out.push({
              kind: 'tool_result',
              toolCallId: id,
              name: call?.name ?? 'tool',
              input: call?.input ?? {},
              output: asText(b.content),
              isError: b.is_error === true,
            });
          }
        } else if (event.type === 'result') {
          const usage = asRecord(event.usage);
          const counts: Record<string, number> = {};
          for (const k of ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens']) {
            if (typeof usage[k] === 'number') counts[k] = usage[k] as number;
          }
          out.push({
            kind: 'usage',
            usage: counts,
            ...(typeof event.total_cost_usd === 'number' ? { costUsd: event.total_cost_usd } : {}),
          });
          const isError = event.is_error === true || (typeof event.subtype === 'string' && event.subtype !== 'success');
          out.push({ kind: 'result', text: typeof event.result === 'string' ? event.result : undefined, isError });
        }
        return out;
      },
    };
  },
};

/** The run's MCP servers as Claude Code's `--mcp-config` names them. */
function mcpServersFor(servers: Record<string, McpServerConfig>) {
  return Object.fromEntries(
    Object.entries(servers).map(([name, s]) => [
      name,
      s.url
        ? { type: 'http', url: s.url, ...(s.headers ? { headers: s.headers } : {}) }
        : { type: 'stdio', command: s.command, args: s.args ?? [], ...(s.env ? { env: s.env } : {}) },
    ]),
  );
}

function isMusl(): boolean {
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  return process.platform === 'linux' && !report?.header?.glibcVersionRuntime;
}
