import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';

/**
 * docker-compose.yml and the Dockerfile, read as files (there is no Docker engine in CI): the
 * workers get the privileges the guide lists and no more, a volume and a WORKER_ID each, and time
 * to drain; the image runs as a non-root user by number, under an init.
 */

const ROOT = path.join(__dirname, '..', '..');

interface ComposeService {
  command?: string[];
  entrypoint?: string[];
  user?: string;
  privileged?: boolean;
  cap_add?: string[];
  cap_drop?: string[];
  security_opt?: string[];
  cgroup?: string;
  volumes?: string[];
  environment?: Record<string, string | number>;
  stop_grace_period?: string;
}

const compose = parse(readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, ComposeService>;
  volumes: Record<string, unknown>;
};
const workers = Object.entries(compose.services).filter(([, s]) => s.command?.includes('dist/worker/main.js'));

test('there are workers, each with the capabilities the guide lists and no more', () => {
  expect(workers.map(([name]) => name)).toEqual(['worker-1', 'worker-2']);
  for (const [, worker] of workers) {
    expect(worker.user).toBe('root');
    expect(worker.privileged ?? false).toBe(false);
    expect(worker.cap_drop).toEqual(['ALL']);
    expect(worker.cap_add).toEqual(['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'KILL', 'SETGID', 'SETUID', 'SYS_ADMIN']);
  }
});

test("workers keep Docker's seccomp profile and a private cgroup namespace, never the host's hierarchy", () => {
  for (const [, worker] of workers) {
    expect(worker.security_opt?.filter((o) => o.startsWith('seccomp'))).toEqual([]);
    expect(worker.security_opt).toEqual(['apparmor=unconfined', 'systempaths=unconfined', 'writable-cgroups=true']);
    expect(worker.cgroup).toBe('private');
    expect(worker.volumes?.filter((v) => v.split(':')[0]!.startsWith('/'))).toEqual([]);
  }
});

test('each worker has a volume of its own for its workspaces, and a WORKER_ID of its own', () => {
  const volumes = workers.map(([, w]) => w.volumes!.find((v) => v.endsWith(':/var/lib/agent-runs'))!.split(':')[0]);
  const ids = workers.map(([, w]) => w.environment?.WORKER_ID);
  expect(new Set(volumes).size).toBe(workers.length);
  expect(new Set(ids).size).toBe(workers.length);
  for (const volume of volumes) expect(compose.volumes).toHaveProperty(volume!);
  for (const [, worker] of workers) {
    expect(String(worker.environment?.AGENT_RUNS_WORKSPACE_DIR)).toMatch(/^\/var\/lib\/agent-runs\//);
  }
});

test('a worker has longer to stop than its drain', () => {
  for (const [, worker] of workers) {
    const drain = Number(worker.environment?.WORKER_DRAIN_SECONDS);
    expect(drain).toBeGreaterThanOrEqual(300);
    expect(Number(/^(\d+)s$/.exec(worker.stop_grace_period ?? '')?.[1])).toBeGreaterThan(drain);
  }
});

test('the disk-limits override is the only place workers become privileged', () => {
  const override = parse(readFileSync(path.join(ROOT, 'deploy', 'compose', 'disk-limits.yml'), 'utf8')) as {
    services: Record<string, ComposeService>;
  };
  expect(Object.keys(override.services)).toEqual(workers.map(([name]) => name));
  for (const service of Object.values(override.services)) {
    expect(service).toEqual({ privileged: true, environment: { AGENT_DISK_LIMITS: 'enforce' } });
  }
});

test('the image runs as a non-root uid by number, under tini, with no setuid program', () => {
  const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  expect(runtime.match(/^USER .*$/gm)).toEqual(['USER 1000:1000']);
  expect(runtime).toMatch(/^ENTRYPOINT \["\/usr\/bin\/tini", "--"\]$/m);
  expect(runtime).toMatch(/apt-get install [^\n]* tini/);
  // After every install: no setuid or setgid program is left for a process to gain privileges by.
  expect(runtime.indexOf('-perm /6000 -exec chmod a-s')).toBeGreaterThan(runtime.lastIndexOf('apt-get install'));
  expect(runtime.indexOf('-perm /6000 -exec chmod a-s')).toBeGreaterThan(runtime.lastIndexOf('npm ci'));
});

test("the namespace job gives Temporal's namespace RUN_RETENTION_DAYS as its retention, and leaves it alone without", () => {
  const job = compose.services['temporal-search-attributes']!;
  expect(job.environment).toEqual({ RUN_RETENTION_DAYS: '${RUN_RETENTION_DAYS:-}' });
  // The script as compose hands it to the shell ($$ is a $), with a `temporal` that notes its arguments.
  const script = job.command![0]!.replaceAll('$$', '$');
  const bin = mkdtempSync(path.join(os.tmpdir(), 'compose-temporal-'));
  const calls = path.join(bin, 'calls');
  writeFileSync(path.join(bin, 'temporal'), `#!/bin/sh\necho "$*" >> ${calls}\n`);
  chmodSync(path.join(bin, 'temporal'), 0o755);
  const updates = (days: string) => {
    writeFileSync(calls, '');
    execFileSync(job.entrypoint![0]!, [...job.entrypoint!.slice(1), script], {
      env: { PATH: `${bin}:${process.env.PATH}`, RUN_RETENTION_DAYS: days },
    });
    return readFileSync(calls, 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('operator namespace update'));
  };
  expect(updates('7')).toEqual([
    'operator namespace update --address temporal:7233 --namespace default --retention 168h',
  ]);
  expect(updates('')).toEqual([]);
  rmSync(bin, { recursive: true });
});
