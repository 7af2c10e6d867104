import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { unpackImage } from '../activities/images/unpack-image';
import { ToolMissingError, type ToolSandbox } from '../activities/sandbox/tool-sandbox';
import { HOST_PATH } from '../activities/sandbox/host-root';
import { hostPidsRunning } from './helpers/host-processes';
import { waitFor } from './helpers/test-context';
import { toolSandboxForTests } from './helpers/tool-sandbox';

/**
 * The sandbox skopeo and umoci run in, attacked as a hostile registry or layer would: a tool sees
 * the directories it was given and the host's system directories, nothing else of the host, runs
 * as the tools' uid (never root), and dies with the worker.
 */
const asRoot = process.getuid?.() === 0;
const TOOLS_UID = 200_123;
let tools: ToolSandbox;
beforeAll(async () => {
  tools = await toolSandboxForTests(TOOLS_UID);
});

function run(script: string, writable: string[], network: 'host' | 'none' = 'none') {
  const tool = tools.wrap(['sh', '-c', script], { network, writable, env: { PATH: HOST_PATH } });
  return new Promise<{ code: number | null; output: string }>((resolve, reject) => {
    const child = spawn(tool.file, tool.args, { env: tool.env });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

test('a tool writes only its staging directory, as the tools uid, and sees nothing else of the host', async () => {
  const cache = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-tools-'));
  const staging = path.join(cache, 'staging', 'abc.123');
  const otherEntry = path.join(cache, 'entries', 'def');
  mkdirSync(staging, { recursive: true });
  mkdirSync(otherEntry, { recursive: true });
  // As the image cache is: traversable, so the tools' uid reaches its own staging directory by name.
  chmodSync(cache, 0o711);
  chmodSync(path.dirname(staging), 0o711);
  writeFileSync(path.join(otherEntry, 'image.json'), '{"secret":"other image"}');
  if (asRoot) chownSync(staging, TOOLS_UID, TOOLS_UID);
  const { code, output } = await run(
    [
      'echo "uid=$(id -u)"',
      `echo layer > ${staging}/blob && echo "wrote staging"`,
      `cat ${otherEntry}/image.json 2>/dev/null || echo "no other entry"`,
      `echo x > ${cache}/entries/planted 2>/dev/null || echo "cache read-only"`,
      'echo x > /usr/planted 2>/dev/null || echo "usr read-only"',
      'ls /root 2>/dev/null && echo "SEES /root" || echo "no /root"',
      `ls ${process.cwd()} 2>/dev/null && echo "SEES the worker" || echo "no worker"`,
      'cat /etc/shadow 2>/dev/null && echo "SEES shadow" || echo "no shadow"',
      'echo "processes=$(ls /proc | grep -c "^[0-9]")"',
    ].join('; '),
    [staging],
  );
  expect(code).toBe(0);
  expect(output).toContain(`uid=${asRoot ? TOOLS_UID : process.getuid?.()}`);
  expect(output).toContain('wrote staging');
  expect(readFileSync(path.join(staging, 'blob'), 'utf8')).toBe('layer\n');
  expect(output).toContain('no other entry');
  expect(output).toContain('cache read-only');
  expect(output).toContain('usr read-only');
  expect(output).toContain('no /root');
  expect(output).toContain('no worker');
  expect(output).toContain('no shadow');
  expect(output).not.toContain('SEES');
  expect(output).not.toContain('other image');
  // Its own pid namespace: bwrap's init, the shell and the pipeline counting, against the host's many.
  expect(Number(/processes=(\d+)/.exec(output)?.[1])).toBeLessThanOrEqual(6);
  expect(readdirSync('/proc').filter((p) => /^\d+$/.test(p)).length).toBeGreaterThan(6);
});

test("without a network, a tool has only a loopback of its own; with the host network, the host's interfaces", async () => {
  const none = await run('cat /proc/net/dev | grep -c ":" ', []);
  // Only the loopback device of its own namespace.
  expect(none.output.trim()).toBe('1');
  const host = await run('cat /proc/net/dev | grep -c ":"', [], 'host');
  expect(Number(host.output.trim())).toBeGreaterThanOrEqual(1);
  expect(
    readFileSync('/proc/net/dev', 'utf8')
      .split('\n')
      .filter((l) => l.includes(':')).length,
  ).toBe(Number(host.output.trim()));
});

test('a tool dies with the process that started it (a worker killed mid-pull leaves no download behind)', async () => {
  const name = `agent-runs-tool-${process.pid}`;
  // A parent that starts the tool and is then killed with SIGKILL, as a worker would be.
  const tool = tools.wrap(['bash', '-c', `exec -a ${name} sleep 600`], {
    network: 'none',
    writable: [],
    env: { PATH: HOST_PATH },
  });
  const parent = spawn(
    process.execPath,
    [
      '-e',
      `require('child_process').spawn(${JSON.stringify(tool.file)}, ${JSON.stringify(tool.args)}, { env: ${JSON.stringify(tool.env)}, stdio: 'ignore' }); setInterval(() => {}, 1000);`,
    ],
    { stdio: 'ignore' },
  );
  try {
    await waitFor(
      async () => hostPidsRunning(name),
      (pids) => pids.length === 1,
      'the tool to start',
      10_000,
    );
    parent.kill('SIGKILL');
    await waitFor(
      async () => hostPidsRunning(name),
      (pids) => pids.length === 0,
      'the tool to die with its parent',
      10_000,
    );
  } finally {
    parent.kill('SIGKILL');
    for (const pid of hostPidsRunning(name)) process.kill(pid, 'SIGKILL');
  }
});

test('a tool that is not installed is named, not a confusing exec failure', () => {
  expect(() => tools.wrap(['no-such-image-tool'], { network: 'none', writable: [], env: {} })).toThrow(
    ToolMissingError,
  );
  expect(() => tools.wrap(['no-such-image-tool'], { network: 'none', writable: [], env: {} })).toThrow(
    /no-such-image-tool is not installed/,
  );
});

describe('what an unpack tool leaves behind is never followed by the worker', () => {
  /** A stand-in for a compromised umoci: runs `script` in the work directory instead. */
  function compromised(script: string): ToolSandbox {
    return {
      uid: undefined,
      wrap: (_argv: string[], spec: { writable: string[] }) => ({
        file: '/bin/sh',
        args: ['-c', script, 'sh', spec.writable[0]!],
        env: { PATH: HOST_PATH },
      }),
    } as unknown as ToolSandbox;
  }

  async function unpackWith(script: string) {
    const stage = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-stage-'));
    const work = path.join(stage, 'work');
    mkdirSync(work);
    const outcome = unpackImage(work, stage, {
      timeoutMs: 10_000,
      maxBytes: 1024 ** 3,
      what: 'hostile',
      tools: compromised(script),
    });
    return { stage, outcome };
  }

  test('a root filesystem that is a symlink to the host is refused, and nothing is made through it', async () => {
    const target = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-target-'));
    const { stage, outcome } = await unpackWith(
      `mkdir -p "$1/bundle" && ln -s ${target} "$1/bundle/rootfs" && echo '{}' > "$1/bundle/config.json"`,
    );
    await expect(outcome).rejects.toThrow('umoci unpack left no directory at rootfs');
    // The mount points would have been made in the link's target.
    expect(readdirSync(target)).toEqual([]);
    expect(readdirSync(stage)).toEqual(['work']);
  });

  test('a config that is a symlink to a host file is not read', async () => {
    const { stage, outcome } = await unpackWith(
      `mkdir -p "$1/bundle/rootfs" && ln -s /etc/shadow "$1/bundle/config.json"`,
    );
    await expect(outcome).rejects.toThrow(/ELOOP|symbolic link/);
    expect(readdirSync(stage)).toEqual(['work']);
  });

  test('a bundle that is a symlink is refused', async () => {
    const target = mkdtempSync(path.join(os.tmpdir(), 'agent-runs-target-'));
    mkdirSync(path.join(target, 'rootfs'));
    writeFileSync(path.join(target, 'config.json'), '{}');
    const { outcome } = await unpackWith(`ln -s ${target} "$1/bundle"`);
    await expect(outcome).rejects.toThrow('umoci unpack left no directory at bundle');
    expect(readdirSync(path.join(target, 'rootfs'))).toEqual([]);
  });
});
