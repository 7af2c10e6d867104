import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig, type Config } from '../../core/config';
import { CONFIG_DOCS_COMMAND, configDocs, configurationMarkdown } from '../../core/config/docs';
import { defaultOf, type Variable } from '../../core/config/variable';
import { groups, variables } from '../../core/config/variables';

const root = path.resolve(__dirname, '../..');

function readOrEmpty(file: string): string {
  try {
    return readFileSync(path.join(root, file), 'utf8');
  } catch {
    return '';
  }
}

describe('the declarations', () => {
  test('declare each variable once, with a description, its readers, and a default or what unset means', () => {
    const names = groups.flatMap((g) => Object.keys(g.variables));
    expect(new Set(names).size).toBe(names.length);
    expect(Object.keys(variables)).toEqual(names);
    const declared: [string, Variable][] = Object.entries(variables);
    for (const [name, v] of declared) {
      expect([name, v.description.trim().length > 0 && !v.description.includes('\n')]).toEqual([name, true]);
      expect([name, v.readBy.length > 0]).toEqual([name, true]);
      // The documentation shows the schema's default, or else the declaration's text: exactly one of them.
      expect([name, defaultOf(v) === undefined]).toEqual([name, v.unset !== undefined]);
    }
  });

  test('name only declared variables in the documentation', () => {
    const mentioned = new Set<string>();
    for (const m of configurationMarkdown().matchAll(/`([A-Z][A-Z0-9]*_[A-Z0-9_]*\*?)`|\{([A-Z][A-Z0-9_]*)\}/g)) {
      mentioned.add(m[1] ?? m[2]!);
    }
    const cliVariables = ['AGENT_RUNS_URL', 'AGENT_RUNS_API_KEY'];
    const unknown = [...mentioned].filter((name) =>
      name.endsWith('*')
        ? !Object.keys(variables).some((v) => v.startsWith(name.slice(0, -1)))
        : !(name in variables) && !cliVariables.includes(name),
    );
    expect(unknown).toEqual([]);
  });
});

describe('the generated files', () => {
  test.each(configDocs().map((f) => [f.path, f.content]))('%s is what the declarations make it', (file, expected) => {
    const actual = readOrEmpty(file);
    if (actual === expected) return;
    const a = actual.split('\n');
    const e = expected.split('\n');
    let line = e.findIndex((l, i) => l !== a[i]);
    if (line < 0) line = e.length; // the file goes on past the end
    throw new Error(
      `${file} does not match the declarations in core/config/: run \`${CONFIG_DOCS_COMMAND}\` and commit the result.\n` +
        `First difference, line ${line + 1}:\n  in the file: ${a[line] ?? '(end of file)'}\n  expected:    ${e[line] ?? '(end of file)'}`,
    );
  });

  test('.env.example, uncommented, configures the defaults', () => {
    const env = Object.fromEntries(
      [...readOrEmpty('.env.example').matchAll(/^# ([A-Z][A-Z0-9_]*)=(\S*) {2}# /gm)].map((m) => [m[1]!, m[2]!]),
    );
    expect(Object.keys(env).sort()).toEqual(Object.keys(variables).sort());
    expect(loadConfig(env)).toEqual(loadConfig({}));
  });
});

describe('loadConfig', () => {
  test('an empty environment gives the defaults', () => {
    const dataDir = path.resolve('./.data');
    const workspaceDir = path.join(dataDir, 'workspaces');
    const expected: Config = {
      port: 8080,
      host: '127.0.0.1',
      trustProxyHops: 0,
      publicUrl: 'http://localhost:8080',
      dataDir,
      logLevel: 'info',
      logFormat: undefined,
      objectStore: { kind: 'directory', dir: path.join(dataDir, 'objects') },
      database: { url: undefined, embeddedPort: 54329, queryTimeoutMs: 10_000 },
      temporal: {
        address: undefined,
        namespace: 'default',
        taskQueue: 'agent-runs',
        cliPath: undefined,
        devPort: 7233,
        uiPort: 8233,
        devHttpPort: 7243,
        devMetricsPort: 7244,
        uiUrl: 'http://localhost:8233',
        rpcTimeoutMs: 5000,
        connection: {
          address: undefined,
          namespace: undefined,
          apiKey: undefined,
          tls: undefined,
          metadata: undefined,
          security: 'plaintext',
          sources: [],
        },
      },
      models: {
        openai: { apiKey: undefined, baseUrl: 'https://api.openai.com/v1' },
        anthropic: { apiKey: undefined, baseUrl: 'https://api.anthropic.com' },
        gemini: { apiKey: undefined, baseUrl: 'https://generativelanguage.googleapis.com' },
        prices: {
          'openai/gpt-4o': { input: 2.5, output: 10 },
          'openai/gpt-4o-mini': { input: 0.15, output: 0.6 },
          'openai/gpt-4.1': { input: 2, output: 8 },
          'openai/gpt-4.1-mini': { input: 0.4, output: 1.6 },
          'anthropic/claude-sonnet-4-5': { input: 3, output: 15 },
          'anthropic/claude-haiku-4-5': { input: 1, output: 5 },
        },
        contextTokens: {
          'openai/gpt-4o': 128_000,
          'openai/gpt-4o-mini': 128_000,
          'openai/gpt-4.1': 1_000_000,
          'openai/gpt-4.1-mini': 1_000_000,
          'anthropic/claude-sonnet-4-5': 200_000,
          'anthropic/claude-haiku-4-5': 200_000,
        },
        defaultContextTokens: 128_000,
        defaultModel: 'openai/gpt-4o-mini',
        requestTimeoutSeconds: 600,
        retry: { maxAttempts: 6, initialIntervalMs: 1000, maxIntervalMs: 60_000 },
      },
      idleTimeoutMinutes: 10,
      approvalsMembersMayDecide: false,
      maxIdleTimeoutMinutes: 1440,
      heartbeatTimeoutSeconds: 10,
      errorReferenceBaseUrl: 'http://localhost:8080/errors',
      agent: {
        maxSteps: 50,
        maxTokens: 2_000_000,
        commandTimeoutSeconds: 600,
        harnessTurnTimeoutSeconds: 14_400,
        toolOutputLimitBytes: 30_000,
      },
      orchestration: { maxDepth: 3, maxChildrenPerRun: 10 },
      workspace: {
        dir: workspaceDir,
        gitBaseUrl: 'https://github.com',
        gitToken: undefined,
        gitTokenForPush: false,
        gitCommitAuthor: { name: 'agent-runs', email: 'agent-runs@localhost' },
        gitAllowedOwners: undefined,
        gitForges: { 'github.com': 'github', 'gitlab.com': 'gitlab' },
        imageAllowedRegistries: [],
        setupCommandTimeoutSeconds: 900,
        scheduleToStartSeconds: 60,
      },
      images: {
        cacheDir: path.join(dataDir, 'images'),
        cacheMaxBytes: 20 * 1024 ** 3,
        insecureRegistries: [],
        pullTimeoutSeconds: 1800,
        snapshotMaxAgeMs: 24 * 3_600_000,
        toolsUid: 200_001,
      },
      sandbox: {
        kind: 'bwrap',
        bwrapPath: undefined,
        initPath: undefined,
        uid: 200_000,
        readonlyPaths: [],
        limits: { memoryMb: 4096, maxProcesses: 512, maxFileSizeMb: 2048, cpuSeconds: 3600, maxOpenFiles: 4096 },
        runLimits: 'enforce',
        cpus: 0,
        workspaceMaxBytes: 10 * 1024 ** 3,
        diskLimits: 'enforce',
      },
      worker: {
        id: `${os.hostname()}-${createHash('sha256').update(workspaceDir).digest('hex').slice(0, 12)}`,
        maxConcurrentRuns: 50,
        leaseSeconds: 60,
        drainSeconds: 300,
        sweepIntervalSeconds: 300,
        workflowBundle: undefined,
      },
      network: {
        defaultPolicy: 'open',
        sandboxAllowedPrivateHosts: [],
        outboundAllowedPrivateHosts: [],
        egressCidrs: [],
      },
      reconcileIntervalSeconds: 20,
      restoreMode: false,
      downloadUrlTtlSeconds: 3600,
      sessionLinkTtlSeconds: 86400,
      sseHeartbeatSeconds: 15,
      sseCaps: { total: 1000, perClient: 20, perRun: 100 },
      secretsKeyring: undefined,
      webhooks: {
        timeoutSeconds: 10,
        retry: { initialIntervalMs: 1000, maxIntervalMs: 3_600_000, windowSeconds: 86_400 },
        logRetentionDays: 30,
      },
      forgeStatus: { webhookSecrets: {}, pollStaleSeconds: 1800 },
      quotas: {
        requestsPerMinute: 600,
        unauthenticatedPerMinute: 300,
        factoryValidatePerMinute: 30,
        teamMaxRunsPerHour: 1000,
        teamMaxConcurrentRuns: 100,
        teamMaxSchedules: 100,
        teamMaxWebhooks: 20,
        teamMaxSecrets: 100,
        teamMaxAgents: 500,
        teamMaxEnvironments: 200,
        teamMaxStoredBytes: 100 * 1024 ** 3,
      },
      objectGraceSeconds: 86_400,
      runRetentionDays: undefined,
      auditRetentionDays: undefined,
      auditOperator: undefined,
      metrics: { bearerToken: undefined, workerPort: 9464 },
      tracing: undefined,
    };
    expect(loadConfig({})).toStrictEqual(expected);
  });

  test('an empty or blank variable is unset', () => {
    const blank = Object.fromEntries(Object.keys(variables).map((name, i) => [name, i % 2 ? '' : '  ']));
    expect(loadConfig(blank)).toStrictEqual(loadConfig({}));
  });

  test('values derived from others follow them', () => {
    const config = loadConfig({
      PORT: '9000',
      TEMPORAL_ADDRESS: 'temporal:7233',
      AGENT_IDLE_TIMEOUT_MINUTES: '100',
      AGENT_MAX_IDLE_TIMEOUT_MINUTES: '30',
      WEBHOOK_RETRY_INITIAL_INTERVAL_MS: '5000',
      WEBHOOK_RETRY_MAX_INTERVAL_MS: '10',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
      OTEL_EXPORTER_OTLP_HEADERS: 'Api-Key=a%20b,x=1',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x=2',
    });
    expect(config.publicUrl).toBe('http://localhost:9000');
    expect(config.errorReferenceBaseUrl).toBe('http://localhost:9000/errors');
    expect(config.temporal.uiUrl).toBeUndefined();
    expect(config.idleTimeoutMinutes).toBe(30);
    expect(config.webhooks.retry.maxIntervalMs).toBe(5000);
    expect(config.tracing).toEqual({
      tracesUrl: 'http://collector:4318/v1/traces',
      headers: { 'api-key': 'a b', x: '2' },
      serviceName: undefined,
    });
  });

  const badValues: [string, Record<string, string>][] = [
    ['PORT', { PORT: '99999' }],
    ['PORT', { PORT: 'eighty' }],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }],
    ['LOG_FORMAT', { LOG_FORMAT: 'xml' }],
    ['AGENT_NETWORK_DEFAULT', { AGENT_NETWORK_DEFAULT: 'not a domain!' }],
    ['MODEL_PRICES', { MODEL_PRICES: '{"openai/gpt-4o": {input: 1}' }],
    ['MODEL_PRICES', { MODEL_PRICES: '{"openai/gpt-4o":{"input":-1,"output":1}}' }],
    ['MODEL_CONTEXT_TOKENS', { MODEL_CONTEXT_TOKENS: '{"openai/my-model":10}' }],
    [
      'OTEL_EXPORTER_OTLP_HEADERS',
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_HEADERS: 'no-value' },
    ],
    [
      'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_EXPORTER_OTLP_TRACES_HEADERS: '=x' },
    ],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://' }],
    ['OTEL_SDK_DISABLED', { OTEL_SDK_DISABLED: 'yes' }],
    ['AGENT_RUN_LIMITS', { AGENT_RUN_LIMITS: 'maybe' }],
    ['AGENT_SANDBOX_CPUS', { AGENT_SANDBOX_CPUS: '-1' }],
    ['AGENT_SANDBOX', { AGENT_SANDBOX: 'docker' }],
    ['AGENT_WORKSPACE_MAX_BYTES', { AGENT_WORKSPACE_MAX_BYTES: '1.5' }],
    ['RUN_RETENTION_DAYS', { RUN_RETENTION_DAYS: '0' }],
    ['RESTORE_MODE', { RESTORE_MODE: 'yes' }],
    ['RUN_RETENTION_DAYS', { RUN_RETENTION_DAYS: '2.5' }],
    ['WORKER_ID', { WORKER_ID: 'has spaces' }],
    ['WORKER_LEASE_SECONDS', { WORKER_LEASE_SECONDS: '4' }],
    ['WORKER_WORKFLOW_BUNDLE', { WORKER_WORKFLOW_BUNDLE: '/nonexistent/workflow-bundle.js' }],
    ['WORKER_WORKFLOW_BUNDLE', { WORKER_WORKFLOW_BUNDLE: 'relative/workflow-bundle.js' }],
    ['PUBLIC_URL', { PUBLIC_URL: 'agent-runs.example.com' }],
    ['OPENAI_BASE_URL', { OPENAI_BASE_URL: 'not a url' }],
    ['TRUST_PROXY_HOPS', { TRUST_PROXY_HOPS: '11' }],
    ['EGRESS_CIDRS', { EGRESS_CIDRS: '203.0.113.0/24,example.com' }],
    ['EGRESS_CIDRS', { EGRESS_CIDRS: '10.0.0.0/33' }],
    ['IMAGE_ALLOWED_REGISTRIES', { IMAGE_ALLOWED_REGISTRIES: 'ghcr.io,https://registry.internal' }],
    ['OBJECT_STORE', { OBJECT_STORE: 'gcs' }],
    ['OBJECT_STORE_S3_BUCKET', { OBJECT_STORE: 's3' }],
    ['OBJECT_STORE_S3_BUCKET', { OBJECT_STORE_S3_BUCKET: 'Not_A_Bucket' }],
    ['OBJECT_STORE_S3_PREFIX', { OBJECT_STORE_S3_BUCKET: 'b-1', OBJECT_STORE_S3_PREFIX: 'a/../b' }],
    ['OBJECT_STORE_S3_ENDPOINT', { OBJECT_STORE_S3_BUCKET: 'b-1', OBJECT_STORE_S3_ENDPOINT: 'minio:9000' }],
    ['OBJECT_STORE_S3_FORCE_PATH_STYLE', { OBJECT_STORE_S3_FORCE_PATH_STYLE: 'yes' }],
  ];

  test.each(badValues)('a bad %s stops it, naming the variable', (name, env) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(new RegExp(`^Invalid configuration:\\n {2}${name}: \\S`));
  });

  test('every bad value is named, one per line', () => {
    expect(() => loadConfig({ PORT: '99999', LOG_LEVEL: 'loud', AGENT_RUN_LIMITS: 'maybe' })).toThrow(
      /^Invalid configuration:\n {2}PORT: .*\n {2}LOG_LEVEL: .*\n {2}AGENT_RUN_LIMITS: .*$/,
    );
  });

  test('the object store: a directory (under the data directory unless named), or S3 once a bucket is named', () => {
    expect(loadConfig({ AGENT_RUNS_DATA_DIR: '/srv/data' }).objectStore).toEqual({
      kind: 'directory',
      dir: '/srv/data/objects',
    });
    expect(loadConfig({ OBJECT_STORE_DIR: '/mnt/shared/objects' }).objectStore).toEqual({
      kind: 'directory',
      dir: '/mnt/shared/objects',
    });
    expect(
      loadConfig({ OBJECT_STORE_S3_BUCKET: 'runs', OBJECT_STORE_S3_PREFIX: '/prod/agent-runs/' }).objectStore,
    ).toEqual({
      kind: 's3',
      bucket: 'runs',
      prefix: 'prod/agent-runs',
      endpoint: undefined,
      region: undefined,
      forcePathStyle: false,
    });
    // A server that is not AWS: path-style addressing and a region it ignores, unless said otherwise.
    const minio = { OBJECT_STORE: 's3', OBJECT_STORE_S3_BUCKET: 'runs', OBJECT_STORE_S3_ENDPOINT: 'http://minio:9000' };
    expect(loadConfig(minio).objectStore).toMatchObject({ region: 'us-east-1', forcePathStyle: true });
    expect(
      loadConfig({ ...minio, OBJECT_STORE_S3_REGION: 'eu-west-3', OBJECT_STORE_S3_FORCE_PATH_STYLE: 'false' })
        .objectStore,
    ).toMatchObject({ region: 'eu-west-3', forcePathStyle: false });
    // Named explicitly, the directory wins over a bucket left set.
    expect(loadConfig({ OBJECT_STORE: 'directory', OBJECT_STORE_S3_BUCKET: 'runs' }).objectStore.kind).toBe(
      'directory',
    );
  });

  test('IMAGE_ALLOWED_REGISTRIES: hosts with their ports, in lower case', () => {
    expect(
      loadConfig({ IMAGE_ALLOWED_REGISTRIES: ' GHCR.io, registry.internal:5000 ' }).workspace.imageAllowedRegistries,
    ).toEqual(['ghcr.io', 'registry.internal:5000']);
  });

  test('GIT_FORGES: host=kind pairs over the built-in hosts, in lower case; anything else names the bad pair', () => {
    expect(
      loadConfig({ GIT_FORGES: ' Git.Example.com=gitea, ghe.example.com:8443=GitHub,gitlab.com=gitea' }).workspace
        .gitForges,
    ).toEqual({
      'github.com': 'github',
      'gitlab.com': 'gitea',
      'git.example.com': 'gitea',
      'ghe.example.com:8443': 'github',
    });
    for (const bad of ['git.example.com', 'git.example.com=bitbucket', 'https://git.example.com=gitea', 'a=gitea=b']) {
      expect(() => loadConfig({ GIT_FORGES: bad })).toThrow(`GIT_FORGES: \`${bad}\` is not host=kind`);
    }
  });

  test('EGRESS_CIDRS: networks in canonical form, without duplicates, in the order given', () => {
    const config = loadConfig({
      EGRESS_CIDRS: ' 203.0.113.7/24, 2001:DB8:0:0::1/48,198.51.100.9 ,203.0.113.0/24,2001:db8::5',
    });
    expect(config.network.egressCidrs).toEqual([
      '203.0.113.0/24',
      '2001:db8::/48',
      '198.51.100.9/32',
      '2001:db8::5/128',
    ]);
  });
});

test('RESTORE_MODE: on only when `true`', () => {
  expect(loadConfig({ RESTORE_MODE: 'true' }).restoreMode).toBe(true);
  expect(loadConfig({ RESTORE_MODE: 'false' }).restoreMode).toBe(false);
  expect(loadConfig({}).restoreMode).toBe(false);
});

test('RUN_RETENTION_DAYS: a whole number of days, unset keeps runs', () => {
  expect(loadConfig({ RUN_RETENTION_DAYS: '30' }).runRetentionDays).toBe(30);
  expect(loadConfig({ RUN_RETENTION_DAYS: ' ' }).runRetentionDays).toBeUndefined();
});
