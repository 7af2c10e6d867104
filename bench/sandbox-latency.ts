/**
 * Benchmark: the cost of the sandbox on one agent command. Runs `true` through the same path as
 * the run_command tool (runProcesses → runProcess), unsandboxed, in the run's command sandbox
 * without network (policy none) and with the egress proxy bridge (policy open), and in a sandbox
 * of its own with the bridge (as MCP servers and harness CLIs start, and as every command did
 * before the command sandbox), each in a run of its own, in alternating rounds. With each, the
 * whole machine's CPU time per command (every process's and the kernel's).
 * Usage: npm run bench:sandbox -- [rounds=200]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createSandbox } from '../activities/sandbox/create-sandbox';
import type { Sandbox } from '../activities/sandbox/sandbox';
import { runProcesses } from '../activities/sandbox/sandboxed-process';
import { Unsandboxed } from '../activities/sandbox/unsandboxed';
import { loadConfig } from '../core/config';
import { createLogger } from '../core/logger';
import type { NetworkPolicy } from '../core/network-policy';
import { OutboundAddressRules } from '../core/outbound-addresses';
import { machineBusyMs } from './process-tree-cpu';

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
const p95 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length * 0.95)] ?? NaN;

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 200);
  const root = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-bench-sandbox-'));
  const config = loadConfig({ AGENT_RUNS_WORKSPACE_DIR: root, LOG_LEVEL: 'error' });
  const bwrap = await createSandbox(config, new OutboundAddressRules([]), createLogger('error', 'bench'));
  const none = new Unsandboxed(root);
  const variants: {
    name: string;
    sandbox: Sandbox;
    policy: NetworkPolicy;
    ofItsOwn?: boolean;
    times: number[];
    cpuMs: number;
  }[] = [
    { name: 'unsandboxed', sandbox: none, policy: 'none', times: [], cpuMs: 0 },
    { name: 'bwrap, network none', sandbox: bwrap, policy: 'none', times: [], cpuMs: 0 },
    { name: 'bwrap, proxy (open)', sandbox: bwrap, policy: 'open', times: [], cpuMs: 0 },
    { name: 'bwrap of its own, proxy', sandbox: bwrap, policy: 'open', ofItsOwn: true, times: [], cpuMs: 0 },
  ];
  const runOf = (index: number) => `bench-${index}`;
  for (const [index, v] of variants.entries()) await v.sandbox.prepareRun(runOf(index));
  for (let i = 0; i < rounds; i++) {
    for (const [index, v] of variants.entries()) {
      const started = process.hrtime.bigint();
      const busy = machineBusyMs();
      const processes = runProcesses(v.sandbox, runOf(index));
      const options = { policy: v.policy, timeoutMs: 30_000, keepBytes: 1024 };
      const result = v.ofItsOwn
        ? await processes.runProgram({ argv: ['/bin/bash', '-c', 'true'], onImage: true, ...options })
        : await processes.runCommand({ command: 'true', ...options });
      if (result.exitCode !== 0) throw new Error(`${v.name}: exit ${result.exitCode}: ${result.output}`);
      v.times.push(Number(process.hrtime.bigint() - started) / 1e6);
      v.cpuMs += machineBusyMs() - busy;
    }
  }
  const base = median(variants[0]!.times);
  process.stdout.write(
    `run_command \`true\`, ${rounds} rounds each, alternating (CPU: the whole machine's, the kernel's included, per command)\n`,
  );
  for (const v of variants) {
    const m = median(v.times);
    process.stdout.write(
      `${v.name.padEnd(24)} median ${m.toFixed(1).padStart(6)} ms   p95 ${p95(v.times).toFixed(1).padStart(6)} ms   added ${(m - base).toFixed(1).padStart(6)} ms   CPU ${(v.cpuMs / rounds).toFixed(1).padStart(5)} ms\n`,
    );
  }
  rmSync(root, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
