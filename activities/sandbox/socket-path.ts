import { chmodSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Unix socket paths are capped at 107 bytes (sun_path), and a listen on a longer one binds a
 * cut path that nothing finds. Under a deep workspace directory, sockets go to a short
 * directory of the worker's instead: traversable but not listable, each socket's name random.
 */
const MAX_SOCKET_PATH_BYTES = 100;

export function socketPath(preferredDir: string, name: string): string {
  const preferred = path.join(preferredDir, name);
  if (Buffer.byteLength(preferred) <= MAX_SOCKET_PATH_BYTES) return preferred;
  const short = path.join(os.tmpdir(), `agent-runs-sockets-${process.getuid?.() ?? 'u'}`);
  mkdirSync(short, { recursive: true, mode: 0o711 });
  chmodSync(short, 0o711);
  return path.join(short, name);
}
