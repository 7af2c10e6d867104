import path from 'node:path';
import type { McpServerConfig } from '../../core/run-types';
import {
  asRecord,
  asText,
  QUIET_ENVIRONMENT,
  type CliHarness,
  type CliTurn,
  type EventTranslator,
  type HarnessEntry,
} from './cli-harness';
import { locatePackage } from './cli-install';
import { TOOL_CALL_ROUTE } from './model-gateway';

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
    const readonlyFiles = turn.approvalHook ? approvalHookFiles(turn, turn.approvalHook) : undefined;
    if (turn.approvalHook) argv.push('--settings', path.posix.join(turn.approvalHook.dir, 'settings.json'));
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
      ...(readonlyFiles ? { readonlyFiles } : {}),
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

/**
 * The run's approval gate as Claude Code's own: a `PreToolUse` hook on every tool in settings
 * given with `--settings` (read-only to the run; `disableAllHooks: false` outranks a user
 * settings file the agent could write), which asks the model gateway about each call and fails
 * closed (exit 2 blocks the call) when it cannot get an answer.
 */
function approvalHookFiles(turn: CliTurn, hook: { dir: string; nodePath: string }): Record<string, string> {
  const script = path.posix.join(hook.dir, 'pre-tool-use.cjs');
  const command = [hook.nodePath, '--jitless', script].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const settings = {
    disableAllHooks: false,
    hooks: { PreToolUse: [{ matcher: '*', hooks: [{ type: 'command', command, timeout: 120 }] }] },
  };
  const gate = { url: `${turn.gatewayUrl.replace(/\/+$/, '')}${TOOL_CALL_ROUTE}`, token: turn.token };
  return {
    'settings.json': JSON.stringify(settings),
    'pre-tool-use.cjs': `const GATE = ${JSON.stringify(gate)};\n${PRE_TOOL_USE_HOOK}`,
  };
}

/** The hook: the call (from standard input) to the gateway, its decision back in Claude Code's terms. */
const PRE_TOOL_USE_HOOK = `
const http = require('node:http');
const refuse = (why) => {
  process.stderr.write('agent-runs: ' + why + '; the call did not run.');
  process.exit(2);
};
let input = '';
process.stdin.on('data', (c) => (input += c));
process.stdin.on('end', () => {
  let event;
  try {
    event = JSON.parse(input);
  } catch {
    return refuse('the approval hook could not read the call');
  }
  const body = JSON.stringify({ tool: String(event.tool_name), input: event.tool_input || {} });
  const req = http.request(GATE.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': GATE.token },
  });
  req.on('error', (e) => refuse('the approval gate could not be reached (' + e.message + ')'));
  req.on('response', (res) => {
    let out = '';
    res.on('data', (c) => (out += c));
    res.on('end', () => {
      let d;
      try {
        d = JSON.parse(out);
      } catch {
        d = undefined;
      }
      if (res.statusCode !== 200 || !d) return refuse('the approval gate answered HTTP ' + res.statusCode);
      if (d.decision === 'allow') process.exit(0);
      const reason = String(d.reason || 'denied by agent-runs');
      process.stdout.write(
        JSON.stringify({
          hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: reason },
        }),
      );
      process.exit(0);
    });
  });
  req.end(body);
});
`;

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
