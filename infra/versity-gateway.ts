import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { dyingWithThisProcess, stopChild } from './child-process';
import { ensureGoModuleBinary } from './go-module-binary';

/**
 * Versity Gateway (github.com/versity/versitygw, Apache-2.0): an S3 server over a directory, the
 * real S3-compatible server the object store's S3 backend is tested against. One Go binary,
 * built from the Go module proxy's copy of this version once per machine.
 */
export const VERSITY_GATEWAY_MODULE = 'github.com/versity/versitygw';
export const VERSITY_GATEWAY_VERSION = 'v1.8.0';

/** The `versitygw` binary, built into the cache (`agent-runs/versitygw/<version>`) the first time. */
export function ensureVersityGateway(): Promise<string> {
  return ensureGoModuleBinary({
    description: 'Versity Gateway (the S3 server of the tests)',
    module: VERSITY_GATEWAY_MODULE,
    version: VERSITY_GATEWAY_VERSION,
    pkg: './cmd/versitygw',
    name: 'versitygw',
  });
}

export interface VersityGateway {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  stop(): Promise<void>;
}

/**
 * Starts the gateway on `127.0.0.1:<port>` over `dir` (each subdirectory a bucket; `buckets` are
 * made), one root account, metadata in a side directory instead of extended attributes (which
 * not every temporary filesystem has). It dies with this process. Resolves once it answers.
 */
export async function startVersityGateway(options: {
  binary: string;
  dir: string;
  port: number;
  buckets: string[];
  accessKeyId: string;
  secretAccessKey: string;
}): Promise<VersityGateway> {
  const { dir, port, accessKeyId, secretAccessKey } = options;
  const data = path.join(dir, 'data');
  const sidecar = path.join(dir, 'meta');
  for (const bucket of options.buckets) await mkdir(path.join(data, bucket), { recursive: true });
  await mkdir(sidecar, { recursive: true });
  const args = ['--port', `127.0.0.1:${port}`, '--quiet', 'posix', '--sidecar', sidecar, data];
  const { command, args: wrapped } = dyingWithThisProcess(options.binary, args, 'SIGTERM');
  const child = spawn(command, wrapped, {
    // The root account's keys through its environment, not its command line (`ps` shows that).
    env: { PATH: process.env.PATH, ROOT_ACCESS_KEY_ID: accessKeyId, ROOT_SECRET_ACCESS_KEY: secretAccessKey },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const endpoint = `http://127.0.0.1:${port}`;
  await answering(endpoint, child);
  return { endpoint, accessKeyId, secretAccessKey, stop: () => stopChild(child, 5_000) };
}

/** Resolves once the server answers HTTP (any status); rejects when it exits or 30 s pass. */
async function answering(endpoint: string, child: ChildProcess): Promise<void> {
  const stderr: string[] = [];
  const collect = (chunk: Buffer) => stderr.push(chunk.toString('utf8'));
  child.stderr?.on('data', collect);
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`Versity Gateway exited (${child.signalCode ?? child.exitCode}): ${stderr.join('').trim()}`);
    }
    const answered = await fetch(endpoint, { signal: AbortSignal.timeout(1_000) }).then(
      () => true,
      () => false,
    );
    if (answered) {
      // Read on and dropped from now on, so that a full pipe never blocks it.
      child.stderr?.off('data', collect).resume();
      return;
    }
    if (Date.now() > deadline) {
      await stopChild(child, 1_000);
      throw new Error(`Versity Gateway did not answer at ${endpoint} within 30 s: ${stderr.join('').trim()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
