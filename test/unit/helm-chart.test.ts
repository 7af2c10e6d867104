import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { IContainer, IPodSpec } from 'kubernetes-models/v1';
import { parse, parseAllDocuments } from 'yaml';
import { variables } from '../../core/config/variables';
import type { Reader } from '../../core/config/variable';
import { ensureHelm } from '../../infra/helm';

/**
 * The Helm chart (deploy/helm/agent-runs), checked offline: `helm lint` and `helm template` for
 * every documented value set (its ci/ directory), every rendered object against the Kubernetes
 * API's schemas, and the security properties the guide (docs/deploy-kubernetes.md) claims.
 * Nothing here proves the pods run on a real cluster: the guide says what was not tried.
 */

const run = promisify(execFile);
const ROOT = path.join(__dirname, '..', '..');
const CHART = path.join(ROOT, 'deploy', 'helm', 'agent-runs');
const VALUE_SETS = readdirSync(path.join(CHART, 'ci')).filter((f) => f.endsWith('-values.yaml'));
/** The capabilities the worker's container gets, and no other (the chart's comments say why each). */
const WORKER_CAPABILITIES = ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'KILL', 'SETGID', 'SETUID', 'SYS_ADMIN'];
/** Variables the service reads through a library rather than core/config: the AWS SDK's credentials. */
const LIBRARY_VARIABLES: Record<string, Reader[]> = {
  AWS_ACCESS_KEY_ID: ['API', 'workers'],
  AWS_SECRET_ACCESS_KEY: ['API', 'workers'],
};

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  spec: Record<string, unknown>;
}

interface Rendered {
  objects: K8sObject[];
  byKind(kind: string): K8sObject[];
  one(kind: string, nameSuffix: string): K8sObject;
}

let helm: string;
const rendered = new Map<string, Rendered>();
const schemaErrors = new Map<string, string[]>();

async function template(valueFiles: string[], extraArgs: string[] = []): Promise<string> {
  const args = ['template', 'agent-runs', CHART, '--namespace', 'agent-runs', '--kube-version', 'v1.33.0'];
  for (const file of valueFiles) args.push('--values', file);
  const { stdout } = await run(helm, [...args, ...extraArgs], { maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

function parseObjects(text: string): Rendered {
  const objects = parseAllDocuments(text)
    .map((doc) => doc.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
  const byKind = (kind: string) => objects.filter((o) => o.kind === kind);
  const one = (kind: string, suffix: string) => {
    const found = byKind(kind).filter((o) => o.metadata.name.endsWith(suffix));
    if (found.length !== 1) throw new Error(`${found.length} ${kind} named *${suffix}`);
    return found[0]!;
  };
  return { objects, byKind, one };
}

/** Every object through the Kubernetes API's schemas, in one child process (test/unit/kubernetes-validate.ts). */
async function validateAll(objects: K8sObject[]): Promise<{ object: string; errors: string[] }[]> {
  const child = execFile(process.execPath, ['--import', 'tsx', path.join(__dirname, 'kubernetes-validate.ts')], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
  });
  const output = new Promise<string>((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve(stdout) : reject(new Error(`validator exited ${code}: ${stderr}`)),
    );
  });
  child.stdin!.end(JSON.stringify(objects));
  return JSON.parse(await output) as { object: string; errors: string[] }[];
}

const podSpec = (o: K8sObject) => (o.spec.template as { spec: IPodSpec }).spec;
const container = (o: K8sObject, name: string) => podSpec(o).containers.find((c) => c.name === name)!;
const envOf = (c: IContainer) => new Map((c.env ?? []).map((e) => [e.name, e]));

beforeAll(async () => {
  // Built once per machine into the cache (CI builds it in its own step: bin/ensure-helm.ts); the
  // first build may take up to its timeout of 30 minutes, hence this hook's.
  helm = await ensureHelm();
  const all: K8sObject[] = [];
  const owners: string[] = [];
  for (const set of VALUE_SETS) {
    const values = path.join(CHART, 'ci', set);
    await run(helm, ['lint', '--strict', CHART, '--values', values, '--kube-version', 'v1.33.0']);
    const objects = parseObjects(await template([values]));
    rendered.set(set, objects);
    all.push(...objects.objects);
    owners.push(...objects.objects.map(() => set));
  }
  const results = await validateAll(all);
  results.forEach((result, i) => {
    const errors = schemaErrors.get(owners[i]!) ?? [];
    errors.push(...result.errors.map((e) => `${result.object}: ${e}`));
    schemaErrors.set(owners[i]!, errors);
  });
}, 1_900_000);

test('the documented value sets are the ones checked', () => {
  expect(VALUE_SETS.sort()).toEqual([
    'disk-limits-enforce-values.yaml',
    'minimal-values.yaml',
    's3-postgres-tls-values.yaml',
    'servicemonitor-values.yaml',
    'temporal-mtls-api-key-values.yaml',
  ]);
});

describe.each(VALUE_SETS)('%s', (set) => {
  const r = () => rendered.get(set)!;

  test('every rendered object fits the Kubernetes API schema of its kind', () => {
    expect(r().objects.length).toBeGreaterThan(5);
    expect(schemaErrors.get(set)).toEqual([]);
  });

  test('the API is a Deployment with a disruption budget, probes and a non-root, read-only container', () => {
    const api = r().one('Deployment', '-api');
    const pod = podSpec(api);
    expect(pod.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 1000,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(pod.hostNetwork ?? false).toBe(false);
    const c = container(api, 'api');
    expect(c.securityContext).toEqual({
      privileged: false,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(c.readinessProbe?.httpGet).toMatchObject({ path: '/readyz', port: 'http' });
    expect(c.livenessProbe?.httpGet).toMatchObject({ path: '/healthz', port: 'http' });
    expect(c.ports).toEqual([{ name: 'http', containerPort: 8080 }]);
    expect(envOf(c).get('PORT')?.value).toBe('8080');
    const pdb = r().one('PodDisruptionBudget', '-api');
    expect(pdb.spec.selector).toEqual(api.spec.selector);
  });

  test('workers are a StatefulSet: WORKER_ID from the pod name, a volume each, probes on the metrics server', () => {
    const worker = r().one('StatefulSet', '-worker');
    const c = container(worker, 'worker');
    const env = envOf(c);
    expect(env.get('WORKER_ID')?.valueFrom).toEqual({ fieldRef: { fieldPath: 'metadata.name' } });
    const claims = worker.spec.volumeClaimTemplates as { metadata: { name: string } }[];
    expect(claims.map((t) => t.metadata.name)).toEqual(['workspace']);
    const mount = c.volumeMounts!.find((m) => m.name === 'workspace')!;
    expect(env.get('AGENT_RUNS_WORKSPACE_DIR')?.value?.startsWith(`${mount.mountPath}/`)).toBe(true);
    expect(env.get('IMAGE_CACHE_DIR')?.value?.startsWith(`${mount.mountPath}/`)).toBe(true);
    const port = c.ports!.find((p) => p.name === 'metrics')!;
    expect(env.get('WORKER_METRICS_PORT')?.value).toBe(String(port.containerPort));
    expect(c.readinessProbe?.httpGet).toMatchObject({ path: '/readyz', port: 'metrics' });
    expect(c.livenessProbe?.httpGet).toMatchObject({ path: '/healthz', port: 'metrics' });
    expect(r().one('PodDisruptionBudget', '-worker').spec.selector).toEqual(worker.spec.selector);
    expect(r().one('Service', '-worker').spec.clusterIP).toBe('None');
  });

  test('a worker has longer to stop than its drain', () => {
    const worker = r().one('StatefulSet', '-worker');
    const drain = Number(envOf(container(worker, 'worker')).get('WORKER_DRAIN_SECONDS')?.value);
    expect(drain).toBeGreaterThanOrEqual(300);
    expect(podSpec(worker).terminationGracePeriodSeconds).toBeGreaterThan(drain);
  });

  test('no pod mounts a path of the node, or shares its network, PIDs or IPC', () => {
    for (const o of [...r().byKind('Deployment'), ...r().byKind('StatefulSet'), ...r().byKind('Job')]) {
      const pod = podSpec(o);
      expect((pod.volumes ?? []).filter((v) => v.hostPath)).toEqual([]);
      expect([pod.hostNetwork, pod.hostPID, pod.hostIPC].filter(Boolean)).toEqual([]);
      expect(pod.automountServiceAccountToken).toBe(false);
    }
  });

  test('the migration runs before every install and upgrade, as the non-root user', () => {
    const job = r().one('Job', '-migrate');
    expect(job.metadata.annotations?.['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    const c = container(job, 'migrate');
    expect(c.args).toEqual(['node', 'dist/bin/migrate.js']);
    expect(c.securityContext?.readOnlyRootFilesystem).toBe(true);
    expect(podSpec(job).securityContext?.runAsNonRoot).toBe(true);
  });

  test('every variable is one the service reads, in the process that reads it, and secrets come from the Secret', () => {
    const readers: [K8sObject, string, Reader][] = [
      [r().one('Deployment', '-api'), 'api', 'API'],
      [r().one('StatefulSet', '-worker'), 'worker', 'workers'],
    ];
    const readBy = (name: string): Reader[] =>
      LIBRARY_VARIABLES[name] ?? (variables as Record<string, { readBy: Reader[] } | undefined>)[name]?.readBy ?? [];
    // `config` goes to every process alike: each of its names must be read by some process.
    const config = [path.join(CHART, 'values.yaml'), path.join(CHART, 'ci', set)].flatMap((file) =>
      Object.keys((parse(readFileSync(file, 'utf8')) as { config?: object }).config ?? {}),
    );
    for (const [o, name, reader] of readers) {
      for (const e of container(o, name).env ?? []) {
        const readers = readBy(e.name);
        expect([e.name, config.includes(e.name) ? readers.length > 0 : readers.includes(reader)]).toEqual([
          e.name,
          true,
        ]);
      }
    }
    const secretNames = [
      'DATABASE_URL',
      'SECRETS_ENCRYPTION_KEY',
      'SECRETS_ENCRYPTION_KEYS',
      'METRICS_BEARER_TOKEN',
      'TEMPORAL_API_KEY',
      'OPENAI_API_KEY',
    ];
    for (const o of [...r().byKind('Deployment'), ...r().byKind('StatefulSet'), ...r().byKind('Job')]) {
      for (const c of podSpec(o).containers) {
        for (const e of c.env ?? []) {
          if (secretNames.includes(e.name)) expect([e.name, e.valueFrom?.secretKeyRef?.key]).toEqual([e.name, e.name]);
        }
      }
    }
    expect(r().byKind('Secret')).toEqual([]);
    // The keyring of a rotation reaches the API and the workers when the Secret has it.
    for (const [o, name] of readers) {
      expect(envOf(container(o, name)).get('SECRETS_ENCRYPTION_KEYS')?.valueFrom?.secretKeyRef).toMatchObject({
        key: 'SECRETS_ENCRYPTION_KEYS',
        optional: true,
      });
    }
  });
});

describe('worker privileges', () => {
  const leastPrivilege = VALUE_SETS.filter((s) => s !== 'disk-limits-enforce-values.yaml');

  test.each(leastPrivilege)(
    '%s: a pod user namespace, the listed capabilities, the runtime seccomp filter, no privilege',
    (set) => {
      const worker = rendered.get(set)!.one('StatefulSet', '-worker');
      const pod = podSpec(worker);
      expect(pod.hostUsers).toBe(false);
      expect(pod.securityContext).toMatchObject({ runAsUser: 0 });
      const sc = container(worker, 'worker').securityContext!;
      expect(sc.privileged).toBe(false);
      expect(sc.capabilities).toEqual({ drop: ['ALL'], add: WORKER_CAPABILITIES });
      expect(sc.seccompProfile).toEqual({ type: 'RuntimeDefault' });
      expect(sc.appArmorProfile).toEqual({ type: 'Unconfined' });
      expect(sc.procMount).toBe('Unmasked');
      expect(sc.readOnlyRootFilesystem).toBe(true);
      const env = envOf(container(worker, 'worker'));
      expect(env.get('AGENT_DISK_LIMITS')?.value).toBe('measure');
      // Sandboxes' uids inside the 65536 a pod's user namespace maps.
      expect(Number(env.get('AGENT_SANDBOX_UID')?.value)).toBeLessThan(65536);
      expect(Number(env.get('IMAGE_TOOLS_UID')?.value)).toBeLessThan(65536);
    },
  );

  test('privileged only where runs disk limits are enforced by loop devices, and then without a user namespace', () => {
    const worker = rendered.get('disk-limits-enforce-values.yaml')!.one('StatefulSet', '-worker');
    expect(container(worker, 'worker').securityContext?.privileged).toBe(true);
    expect(podSpec(worker).hostUsers).toBeUndefined();
    expect(envOf(container(worker, 'worker')).get('AGENT_DISK_LIMITS')?.value).toBe('enforce');
  });
});

describe('TLS and the bucket', () => {
  const mountedFile = (o: K8sObject, name: string, file: string) => {
    const pod = podSpec(o);
    const mount = container(o, name).volumeMounts!.find((m) => file.startsWith(`${m.mountPath}/`));
    return (
      mount && { secret: pod.volumes!.find((v) => v.name === mount.name)?.secret?.secretName, readOnly: mount.readOnly }
    );
  };

  test('Temporal mTLS: the client certificate, its key and the CA are files of the named Secrets in every process', () => {
    const r = rendered.get('temporal-mtls-api-key-values.yaml')!;
    for (const [o, name] of [
      [r.one('Deployment', '-api'), 'api'],
      [r.one('StatefulSet', '-worker'), 'worker'],
      [r.one('Job', '-migrate'), 'migrate'],
    ] as const) {
      const env = envOf(container(o, name));
      expect(env.get('TEMPORAL_TLS')?.value).toBe('true');
      expect(env.get('TEMPORAL_TLS_SERVER_NAME')?.value).toBe('my-namespace.a1b2c.tmprl.cloud');
      expect(env.get('TEMPORAL_API_KEY')?.valueFrom?.secretKeyRef).toEqual({
        name: 'agent-runs',
        key: 'TEMPORAL_API_KEY',
      });
      for (const [variable, secret] of [
        ['TEMPORAL_TLS_CLIENT_CERT_PATH', 'agent-runs-temporal-client'],
        ['TEMPORAL_TLS_CLIENT_KEY_PATH', 'agent-runs-temporal-client'],
        ['TEMPORAL_TLS_SERVER_CA_CERT_PATH', 'agent-runs-temporal-ca'],
      ]) {
        expect(mountedFile(o, name, env.get(variable!)!.value!)).toEqual({ secret, readOnly: true });
      }
    }
  });

  test('PostgreSQL TLS: the CA is mounted where DATABASE_URL names it; S3 settings reach the API and the workers', () => {
    const r = rendered.get('s3-postgres-tls-values.yaml')!;
    for (const [o, name] of [
      [r.one('Deployment', '-api'), 'api'],
      [r.one('StatefulSet', '-worker'), 'worker'],
    ] as const) {
      expect(mountedFile(o, name, '/etc/agent-runs/postgres-ca/ca.crt')).toEqual({
        secret: 'agent-runs-postgres-ca',
        readOnly: true,
      });
      const env = envOf(container(o, name));
      expect(
        Object.fromEntries([...env].filter(([k]) => k.startsWith('OBJECT_STORE')).map(([k, e]) => [k, e.value])),
      ).toEqual({
        OBJECT_STORE: 's3',
        OBJECT_STORE_S3_BUCKET: 'agent-runs',
        OBJECT_STORE_S3_PREFIX: 'production',
        OBJECT_STORE_S3_ENDPOINT: 'https://minio.storage.svc:9000',
        OBJECT_STORE_S3_REGION: 'us-east-1',
        OBJECT_STORE_S3_FORCE_PATH_STYLE: 'true',
      });
      expect(env.get('AWS_SECRET_ACCESS_KEY')?.valueFrom?.secretKeyRef).toMatchObject({
        key: 'AWS_SECRET_ACCESS_KEY',
        optional: true,
      });
    }
    expect(r.byKind('HorizontalPodAutoscaler')).toEqual([]);
  });
});

describe('the ServiceMonitor', () => {
  test('off unless asked for (it needs the Prometheus Operator)', () => {
    expect(rendered.get('minimal-values.yaml')!.byKind('ServiceMonitor')).toEqual([]);
  });

  test("scrapes the API's and the workers' metrics ports with the Secret's token", () => {
    const r = rendered.get('servicemonitor-values.yaml')!;
    const monitor = r.byKind('ServiceMonitor')[0]!;
    const endpoints = monitor.spec.endpoints as { port: string; authorization: unknown }[];
    expect(endpoints.map((e) => e.port)).toEqual(['http', 'metrics']);
    for (const e of endpoints) {
      expect(e.authorization).toEqual({
        type: 'Bearer',
        credentials: { name: 'agent-runs', key: 'METRICS_BEARER_TOKEN' },
      });
    }
    const servicePorts = r.byKind('Service').flatMap((s) => (s.spec.ports as { name: string }[]).map((p) => p.name));
    expect(servicePorts.sort()).toEqual(['http', 'metrics']);
  });

  test('labels its targets with the job names the alert rules match, whatever the release is called', () => {
    const monitor = rendered.get('servicemonitor-values.yaml')!.byKind('ServiceMonitor')[0]!;
    const jobs = (monitor.spec.endpoints as { relabelings: { targetLabel: string; replacement: string }[] }[]).map(
      (e) => e.relabelings.find((r) => r.targetLabel === 'job')?.replacement,
    );
    expect(jobs).toEqual(['agent-runs-api', 'agent-runs-worker']);
    const rules = readFileSync(path.join(CHART, '..', '..', 'prometheus', 'rules', 'agent-runs.rules.yml'), 'utf8');
    for (const job of jobs) expect(rules).toContain(`job="${job!}"`);
  });
});

describe("the workers' autoscaler", () => {
  test('off by default: the StatefulSet has its replicas', () => {
    const r = rendered.get('minimal-values.yaml')!;
    expect(r.byKind('HorizontalPodAutoscaler').map((h) => h.metadata.name)).toEqual(['agent-runs-api']);
    expect(r.byKind('StatefulSet')[0]!.spec.replicas).toBe(2);
  });

  test('on: scales the StatefulSet on the oldest wait for a worker, the metric the API serves; one drain at a time', () => {
    const r = rendered.get('servicemonitor-values.yaml')!;
    const hpa = r.byKind('HorizontalPodAutoscaler').find((h) => h.metadata.name === 'agent-runs-worker')!;
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'agent-runs-worker' });
    expect(hpa.spec.metrics).toEqual([
      {
        type: 'External',
        external: {
          metric: {
            name: 'agent_runs_runs_waiting_oldest_seconds',
            selector: { matchLabels: { waiting_for: 'worker' } },
          },
          target: { type: 'Value', value: '60' },
        },
      },
    ]);
    expect((hpa.spec.behavior as { scaleDown: { policies: unknown } }).scaleDown.policies).toEqual([
      { type: 'Pods', value: 1, periodSeconds: 330 },
    ]);
    // The autoscaler owns the count: a helm upgrade must not reset it.
    expect(r.byKind('StatefulSet')[0]!.spec).not.toHaveProperty('replicas');
    const served = readdirSync(path.join(ROOT, 'core', 'metrics'))
      .map((f) => readFileSync(path.join(ROOT, 'core', 'metrics', f), 'utf8'))
      .join('\n');
    expect(served).toContain("'agent_runs_runs_waiting_oldest_seconds'");
  });
});

describe('bad values are refused with what to fix', () => {
  const minimal = () => path.join(CHART, 'ci', 'minimal-values.yaml');
  const refusal = (args: string[]) =>
    template([minimal()], args).then(
      () => 'rendered',
      (err: { stderr?: string }) => err.stderr ?? '',
    );

  test('a missing Temporal address', async () => {
    expect(await refusal(['--set', 'temporal.address='])).toMatch(/temporal.*address/);
  });

  test('an unconfined seccomp profile for the worker', async () => {
    expect(await refusal(['--set', 'worker.seccompProfile.type=Unconfined'])).toMatch(/seccompProfile/);
  });

  test('enforced disk limits inside a user namespace', async () => {
    expect(await refusal(['--set', 'worker.diskLimits=enforce'])).toMatch(/worker.userNamespace=false/);
  });

  test('an unknown value', async () => {
    expect(await refusal(['--set', 'worker.privileged=true'])).toMatch(/privileged/);
  });
});
