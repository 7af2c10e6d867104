import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createToolSandbox } from '../../activities/sandbox/create-sandbox';
import type { ToolSandbox } from '../../activities/sandbox/tool-sandbox';
import { loadConfig } from '../../core/config';

/** The image tools' sandbox as a worker makes it, with its own scratch cache directory. */
export async function toolSandboxForTests(uid: number, env: Record<string, string> = {}): Promise<ToolSandbox> {
  const cacheDir = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-tools-cache-'));
  const tools = await createToolSandbox(
    loadConfig({ IMAGE_CACHE_DIR: cacheDir, IMAGE_TOOLS_UID: String(uid), LOG_LEVEL: 'error', ...env }),
  );
  if (!tools) throw new Error('no tool sandbox on this machine: bubblewrap (and setpriv, as root) are needed');
  return tools;
}
