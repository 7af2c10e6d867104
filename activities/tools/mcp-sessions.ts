import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { NetworkPolicy } from '../../core/network-policy';
import type { OutboundAddressRules } from '../../core/outbound-addresses';
import type { McpServerConfig } from '../../core/run-types';
import type { ToolSpec } from '../model/types';
import type { NetworkRefusal } from '../sandbox/egress-proxy';
import type { Sandbox } from '../sandbox/sandbox';
import { guardedFetch } from './guarded-fetch';
import { traceToolCall } from './traced-tool-call';

const CONNECT_TIMEOUT_MS = 30_000;

export class McpServerError extends Error {
  override name = 'McpServerError';
}

interface McpTool {
  server: string;
  tool: string;
  spec: ToolSpec;
}

export interface McpSession {
  tools: McpTool[];
  call(
    toolName: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<{ text: string; isError: boolean }>;
  close(): Promise<void>;
}

/** Tool names as the model sees them: `mcp__<server>__<tool>`, within provider naming rules. */
export function mcpToolName(server: string, tool: string): string {
  return `mcp__${server}__${tool}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
}

async function withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`${what} timed out after ${CONNECT_TIMEOUT_MS / 1000}s`)),
          CONNECT_TIMEOUT_MS,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** What connecting a run's MCP servers needs from the worker. */
export interface McpConnectDeps {
  sandbox: Sandbox;
  /** Address rules for `url` servers (OUTBOUND_ALLOWED_PRIVATE_HOSTS). */
  outboundRules: OutboundAddressRules;
  /** Called for each connection a stdio server's sandbox refused. */
  onRefusal(runId: string, server: string, refusal: NetworkRefusal): void;
}

interface RunScope {
  runId: string;
  policy: NetworkPolicy;
}

async function connectOne(
  name: string,
  config: McpServerConfig,
  deps: McpConnectDeps,
  scope: RunScope,
  releases: (() => Promise<void>)[],
): Promise<Client> {
  const client = new Client({ name: 'agent-runs', version: '1.0.0' });
  if (config.command) {
    // In the run's sandbox, with only the variables the run's config gives on top of its minimal environment.
    const prepared = await deps.sandbox.prepare({
      runId: scope.runId,
      argv: [config.command, ...(config.args ?? [])],
      env: config.env,
      network: {
        kind: 'proxy',
        policy: scope.policy,
        onRefusal: (refusal) => deps.onRefusal(scope.runId, name, refusal),
      },
      onImage: true,
    });
    releases.push(prepared.release);
    // The MCP SDK spawns the server itself: only a sandbox of its own can be started that way.
    if (prepared.entersSandbox) throw new Error(`MCP server "${name}" cannot run in a shared sandbox`);
    const transport = new StdioClientTransport({
      command: prepared.file,
      args: prepared.args,
      env: prepared.env as Record<string, string>,
      cwd: prepared.cwd,
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-2000);
    });
    try {
      await withTimeout(client.connect(transport), `starting MCP server "${name}"`);
    } catch (err) {
      await client.close().catch(() => undefined);
      const detail = stderr.trim() ? `; its stderr ended with: ${stderr.trim()}` : '';
      throw new McpServerError(
        `MCP server "${name}" (${config.command}) could not be started: ${(err as Error).message}${detail}`,
      );
    }
    return client;
  }
  const url = new URL(config.url!);
  const requestInit = { headers: config.headers ?? {} };
  // Every connection, redirects included, goes only to an address the outbound rules allow.
  const fetch = guardedFetch(deps.outboundRules);
  try {
    await withTimeout(
      client.connect(new StreamableHTTPClientTransport(url, { requestInit, fetch })),
      `connecting to MCP server "${name}"`,
    );
    return client;
  } catch (streamableError) {
    // Servers that predate Streamable HTTP speak the older SSE transport.
    const fallback = new Client({ name: 'agent-runs', version: '1.0.0' });
    try {
      await withTimeout(
        fallback.connect(new SSEClientTransport(url, { requestInit, fetch })),
        `connecting to MCP server "${name}"`,
      );
      return fallback;
    } catch {
      throw new McpServerError(
        `MCP server "${name}" at ${url.origin}${url.pathname} could not be reached: ${describeError(streamableError)}`,
      );
    }
  }
}

/** Connects to every server of a run and lists their tools; closes what it opened on failure. */
export async function openMcpSession(
  servers: Record<string, McpServerConfig>,
  deps: McpConnectDeps,
  scope: RunScope,
): Promise<McpSession> {
  const clients = new Map<string, Client>();
  const tools: McpTool[] = [];
  const releases: (() => Promise<void>)[] = [];
  const closeAll = async () => {
    await Promise.all([...clients.values()].map((c) => c.close().catch(() => undefined)));
    await Promise.all(releases.map((release) => release().catch(() => undefined)));
  };
  try {
    for (const [name, config] of Object.entries(servers)) {
      const client = await connectOne(name, config, deps, scope, releases);
      clients.set(name, client);
      let listed;
      try {
        listed = await withTimeout(client.listTools(), `listing the tools of MCP server "${name}"`);
      } catch (err) {
        throw new McpServerError(
          `MCP server "${name}" started but listing its tools failed: ${(err as Error).message}`,
        );
      }
      for (const tool of listed.tools) {
        tools.push({
          server: name,
          tool: tool.name,
          spec: {
            name: mcpToolName(name, tool.name),
            description: `[MCP server ${name}] ${tool.description ?? tool.name}`,
            parameters: tool.inputSchema as Record<string, unknown>,
          },
        });
      }
    }
  } catch (err) {
    await closeAll();
    throw err;
  }
  return {
    tools,
    call: (toolName, args, signal) =>
      traceToolCall(toolName, 'mcp', async () => {
        const tool = tools.find((t) => t.spec.name === toolName);
        if (!tool) return { text: `Unknown MCP tool ${toolName}`, isError: true };
        try {
          const result = await clients
            .get(tool.server)!
            .callTool({ name: tool.tool, arguments: args }, undefined, { signal });
          const content = (result.content ?? []) as { type: string; text?: string }[];
          const text = content.map((c) => (c.type === 'text' ? (c.text ?? '') : `[${c.type} content]`)).join('\n');
          return { text, isError: result.isError === true };
        } catch (err) {
          return { text: `MCP tool ${tool.server}/${tool.tool} failed: ${(err as Error).message}`, isError: true };
        }
      }),
    close: closeAll,
  };
}

/**
 * MCP sessions of the runs whose workspaces live on this worker, reused across steps and
 * reopened after a worker restart.
 */
export class McpSessionCache {
  private readonly sessions = new Map<string, Promise<McpSession>>();

  /** @param decrypt turns stored credentials (`env`, `headers`) back into their values */
  constructor(
    private readonly deps: McpConnectDeps,
    private readonly decrypt: (servers: Record<string, McpServerConfig>) => Record<string, McpServerConfig>,
  ) {}

  get(runId: string, servers: Record<string, McpServerConfig>, policy: NetworkPolicy): Promise<McpSession> {
    let session = this.sessions.get(runId);
    if (!session) {
      session = openMcpSession(this.decrypt(servers), this.deps, { runId, policy });
      this.sessions.set(runId, session);
      session.catch(() => this.sessions.delete(runId));
    }
    return session;
  }

  async close(runId: string): Promise<void> {
    const session = this.sessions.get(runId);
    this.sessions.delete(runId);
    await (await session?.catch(() => undefined))?.close();
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.sessions.keys()].map((id) => this.close(id)));
  }
}

/** An error with its causes, as fetch hides the reason a connection failed in `cause`. */
function describeError(err: unknown): string {
  const parts: string[] = [];
  for (let e = err as (Error & { cause?: unknown }) | undefined; e && parts.length < 4; e = e.cause as typeof e) {
    if (e.message && !parts.includes(e.message)) parts.push(e.message);
  }
  return parts.join(': ') || String(err);
}
