import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ApiClient } from './api-client';
import { loadCliConfig, type ConnectionOptions } from './cli-config';
import { Output } from './output';

/** What every command works with: the API client and where to write. */
export interface CommandContext {
  client: ApiClient;
  out: Output;
}

/** The package's version, from its package.json (one level up from the source, two from dist/cli). */
export function cliVersion(): string {
  for (const candidate of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(__dirname, candidate), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'agent-runs-service' && pkg.version) return pkg.version;
    } catch {
      // Not this one.
    }
  }
  return '0.0.0';
}

/** Builds the context from the global options; a missing API key is a usage error (exit 2). */
export function commandContext(options: ConnectionOptions & { json?: boolean }): CommandContext {
  const config = loadCliConfig(options);
  return {
    client: new ApiClient(config.apiBaseUrl, config.apiKey, `agent-runs-cli/${cliVersion()}`),
    out: new Output(options.json === true, config.color, config.spinner),
  };
}

/** Reads all of stdin (a prompt or message given as `-`). */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
