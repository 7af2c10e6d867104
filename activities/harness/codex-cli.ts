import path from 'node:path';
import { asRecord, QUIET_ENVIRONMENT, type CliHarness, type EventTranslator, type HarnessEntry } from './cli-harness';
import { locatePackage } from './cli-install';

/** The provider entry Codex is given: the gateway, speaking the Responses API. */
const PROVIDER = 'agent_runs';
const TOKEN_VARIABLE = 'AGENT_RUNS_GATEWAY_TOKEN';

const TRIPLES: Record<string, string> = { x64: 'x86_64-unknown-linux-musl', arm64: 'aarch64-unknown-linux-musl' };

/**
 * Codex CLI (`@openai/codex`): `codex exec --json`, the OpenAI Responses API through the gateway,
 * its own sandbox off (`danger-full-access`: ours is the boundary, and it cannot nest), the
 * thread id it reports resumed with `codex exec resume`.
 */
export const codexCli: CliHarness = {
  type: 'codex',

  locate() {
    const triple = TRIPLES[process.arch];
    if (process.platform !== 'linux' || !triple)
      return { missing: `Codex CLI has no build for ${process.platform}-${process.arch} here` };
    const platform = locatePackage(`@openai/codex-linux-${process.arch}`);
    if ('missing' in platform) return platform;
    const vendor = path.join(platform.dir, 'vendor', triple);
    return { version: platform.version, command: [path.join(vendor, 'bin', 'codex')], readonlyPaths: [platform.dir] };
  },

  invocation(install, turn) {
    const config = [
      `model_provider=${PROVIDER}`,
      `model_providers.${PROVIDER}={ name = "agent-runs gateway", base_url = ${toml(`${turn.gatewayUrl}/v1`)}, env_key = "${TOKEN_VARIABLE}", wire_api = "responses" }`,
      ...(turn.reasoningLevel ? [`model_reasoning_effort=${toml(turn.reasoningLevel)}`] : []),
      ...Object.entries(turn.mcpServers).flatMap(([name, s]) =>
        s.url
          ? [
              `mcp_servers.${name}.url=${toml(s.url)}`,
              ...(s.headers ? [`mcp_servers.${name}.http_headers=${tomlTable(s.headers)}`] : []),
            ]
          : [
              `mcp_servers.${name}.command=${toml(s.command ?? '')}`,
              `mcp_servers.${name}.args=[${(s.args ?? []).map(toml).join(', ')}]`,
              ...(s.env ? [`mcp_servers.${name}.env=${tomlTable(s.env)}`] : []),
            ],
      ),
    ].flatMap((c) => ['-c', c]);
    const common = [
      '--json',
      '--skip-git-repo-check',
      '--dangerously-bypass-approvals-and-sandbox',
      ...config,
      ...(turn.model ? ['-m', turn.model] : []),
    ];
    const prompt = turn.instructions && !turn.resumeSession ? `${turn.instructions}\n\n${turn.prompt}` : turn.prompt;
    const argv = turn.resumeSession
      ? [...install.command, 'exec', 'resume', ...common, turn.resumeSession, prompt]
      : [...install.command, 'exec', ...common, '-C', turn.workspace, prompt];
    const homeFiles: Record<string, string> = {};
    for (const skill of turn.skills) homeFiles[`.codex/skills/${skill.name}/SKILL.md`] = skill.content;
    return {
      argv: argv as [string, ...string[]],
      env: {
        ...QUIET_ENVIRONMENT,
        [TOKEN_VARIABLE]: turn.token,
        CODEX_HOME: path.posix.join(turn.home, '.codex'),
      },
      homeFiles: { ...homeFiles, '.codex/.keep': '' },
    };
  },

  translator(): EventTranslator {
    return {
      line(event) {
        const out: HarnessEntry[] = [];
        const item = asRecord(event.item);
        if (event.type === 'thread.started' && typeof event.thread_id === 'string') {
          out.push({ kind: 'session', sessionId: event.thread_id });
        } else if (event.type === 'item.started' && item.type === 'command_execution') {
          const id = String(item.id);
          const input = { command: String(item.command ?? '') };
          out.push({ kind: 'assistant', text: '', toolCalls: [{ id, name: 'exec_command', arguments: input }] });
          out.push({ kind: 'tool_started', toolCallId: id, name: 'exec_command', input });
        } else if (event.type === 'item.completed') {
          out.push(...completedItem(item));
        } else if (event.type === 'turn.completed') {
          const usage = asRecord(event.usage);
          const counts: Record<string, number> = {};
          for (const [k, v] of Object.entries(usage)) if (typeof v === 'number') counts[k] = v;
          out.push({ kind: 'usage', usage: counts });
          out.push({ kind: 'result', isError: false });
        } else if (event.type === 'turn.failed') {
          const message = String(asRecord(event.error).message ?? 'the turn failed');
          out.push({ kind: 'error', message }, { kind: 'result', isError: true });
        } else if (event.type === 'error') {
          out.push({ kind: 'error', message: String(event.message ?? 'error') });
        }
        return out;
      },
    };
  },
};

function completedItem(item: Record<string, unknown>): HarnessEntry[] {
  const id = String(item.id);
  switch (item.type) {
    case 'agent_message':
      return [{ kind: 'assistant', text: String(item.text ?? ''), toolCalls: [] }];
    case 'command_execution': {
      const exitCode = typeof item.exit_code === 'number' ? item.exit_code : null;
      return [
        {
          kind: 'tool_result',
          toolCallId: id,
          name: 'exec_command',
          input: { command: String(item.command ?? '') },
          output: String(item.aggregated_output ?? ''),
          isError: exitCode !== 0,
          exitCode,
        },
      ];
    }
    case 'file_change': {
      const changes = Array.isArray(item.changes) ? (item.changes as Record<string, unknown>[]) : [];
      const input = { changes: changes.map((c) => ({ path: String(c.path ?? ''), kind: String(c.kind ?? '') })) };
      return [
        { kind: 'assistant', text: '', toolCalls: [{ id, name: 'apply_patch', arguments: input }] },
        {
          kind: 'tool_result',
          toolCallId: id,
          name: 'apply_patch',
          input,
          output: changes.map((c) => `${String(c.kind ?? 'update')} ${String(c.path ?? '')}`).join('\n'),
          isError: item.status === 'failed',
        },
      ];
    }
    case 'mcp_tool_call': {
      const name = `${String(item.server ?? 'mcp')}.${String(item.tool ?? 'tool')}`;
      const input = asRecord(item.arguments);
      const result = item.result === undefined ? asRecord(item.error).message : item.result;
      return [
        { kind: 'assistant', text: '', toolCalls: [{ id, name, arguments: input }] },
        {
          kind: 'tool_result',
          toolCallId: id,
          name,
          input,
          output: typeof result === 'string' ? result : JSON.stringify(result ?? ''),
          isError: item.status === 'failed',
        },
      ];
    }
    case 'error':
      // Warnings too (an unknown model's metadata): the turn's failure comes as `turn.failed`.
      return [{ kind: 'notice', message: String(item.message ?? '') }];
    default:
      return [];
  }
}

const toml = (s: string) => JSON.stringify(s);
const tomlTable = (values: Record<string, string>) =>
  `{ ${Object.entries(values)
    .map(([k, v]) => `${toml(k)} = ${toml(v)}`)
    .join(', ')} }`;
