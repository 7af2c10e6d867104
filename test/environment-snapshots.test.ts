import { execFileSync } from 'node:child_process';
import { appendFileSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createEnvironment } from './helpers/environments';
import { createGitHost } from './helpers/git-fixtures';
import {
  busyboxFiles,
  missingImageTools,
  pushImage,
  startRegistry,
  type LocalRegistry,
} from './helpers/image-registry';
import { auth, createRun, transcript, waitForState } from './helpers/runs';
import type { ChatRequest } from './helpers/scripted-model';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';
import { warpClientCalls } from './helpers/warp-client';
import { ensureWarpClient } from '../infra/python-client';

/**
 * Environment setup snapshots: with `setup_snapshot`, the workspace and home as setup left them
 * are kept (a tar layer in the image cache) and the next run of the same environment, commits,
 * image and configuration starts from them instead of cloning and setting up again.
 */
const git = createGitHost();
git.addRepo('acme', 'tools', { 'README.md': '# Tools\n' });

const SETUP = [
  [
    'echo run >> "$HOME/setup-runs"',
    'date +%s%N > tools/built.txt',
    'mkdir -p tools/node_modules/dep/.bin',
    `printf '#!/bin/sh\\necho dep-ok\\n' > tools/node_modules/dep/.bin/dep`,
    'chmod +x tools/node_modules/dep/.bin/dep',
    'ln -s ../README.md tools/readme-link',
  ].join(' && '),
];
/** What the agent looks at: what setup built, how often it ran, an executable, a symlink, the commit. */
const LOOK =
  'echo "built=$(cat tools/built.txt) runs=$(wc -l < "$HOME/setup-runs")"; tools/node_modules/dep/.bin/dep; readlink tools/readme-link; echo "head=$(git -C tools rev-parse HEAD)"';

let ctx: TestContext;
let registry: LocalRegistry;
beforeAll(async () => {
  expect(missingImageTools()).toEqual([]);
  registry = await startRegistry();
  ctx = await createTestContext({
    env: {
      GIT_BASE_URL: git.baseUrl,
      IMAGE_INSECURE_REGISTRIES: registry.host,
      IMAGE_ALLOWED_REGISTRIES: registry.host,
    },
  });
  await ensureWarpClient();
}, 360_000);
afterAll(async () => {
  await ctx?.close();
  await registry?.stop();
});

/** A model that runs `command` once, then finishes with the command's output in its answer. */
function runsCommand(marker: string, command: string): void {
  ctx.model.script(marker, (req: ChatRequest, call) => {
    if (call === 1) return { text: '', toolCalls: [{ name: 'run_command', arguments: { command } }] };
    const result = req.messages.filter((m) => m.role === 'tool').at(-1)?.content ?? '';
    return { text: `Output:\n${result}` };
  });
}

/** Runs `command` (LOOK) in the environment; what it printed, whether setup ran, and the run's notices. */
async function lookAround(key: string, envId: string, command = LOOK) {
  const marker = uniqueName('snapshot');
  runsCommand(marker, command);
  const runId = await createRun(ctx, key, { prompt: `Look ${marker}`, config: { environment_id: envId } });
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const events = await transcript(ctx, runId);
  const output = events
    .filter((e) => e.kind === 'tool_call')
    .map((e) => String(e.payload.output))
    .join('\n');
  return {
    runId,
    output,
    built: /built=(\S+)/.exec(output)?.[1],
    setupRan: events.some((e) => e.kind === 'command' && e.payload.phase === 'setup'),
    notices: events
      .filter((e) => e.kind === 'notice')
      .map((e) => String(e.payload.message))
      .join('\n'),
  };
}

function commitToTools(file: string): string {
  const dir = path.join(git.root, 'acme', 'tools');
  writeFileSync(path.join(dir, file), `${file}\n`);
  const run = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'pipe' }).toString().trim();
  run('add', '-A');
  run('-c', 'user.name=fixture', '-c', 'user.email=fixture@localhost', 'commit', '--quiet', '-m', file);
  return run('rev-parse', 'HEAD');
}

function snapshotLayers(): string[] {
  const entries = path.join(ctx.config.images.cacheDir, 'entries');
  return readdirSync(entries)
    .map((name) => path.join(entries, name, 'layer.tar'))
    .filter((file) => {
      try {
        return statSync(file).isFile();
      } catch {
        return false;
      }
    });
}

test('setup runs once: the next run starts from the snapshot; a new commit or changed setup commands run setup again', async () => {
  const { key } = await ctx.newTeamKey();
  const config = {
    name: 'tools',
    github_repos: [{ owner: 'acme', repo: 'tools' }],
    setup_commands: SETUP,
    setup_snapshot: true,
  };
  const envId = await createEnvironment(ctx, key, config);

  const first = await lookAround(key, envId);
  expect(first.setupRan).toBe(true);
  expect(first.output).toContain('runs=1');
  expect(first.notices).toMatch(
    /Kept this workspace as the setup snapshot [0-9a-f]{12} in [\d.]+ s \([\d.]+ MiB, layer sha256:[0-9a-f]{64}\)/,
  );

  const second = await lookAround(key, envId);
  expect(second.setupRan).toBe(false);
  expect(second.notices).toMatch(
    /restored the setup snapshot [0-9a-f]{12} of environment tools .*acme\/tools at the same commits; setup commands not run again/,
  );
  expect(second.notices).not.toContain('cloned acme/tools');
  // What setup made, as it made it: the same build, the home's file, an executable, a symlink.
  expect(second.built).toBe(first.built);
  expect(second.output).toContain('runs=1');
  expect(second.output).toContain('dep-ok');
  expect(second.output).toContain('../README.md');
  expect(/head=(\w+)/.exec(second.output)?.[1]).toBe(/head=(\w+)/.exec(first.output)?.[1]);
  // The restored workspace is the run's own, as a cloned one is.
  const workspace = path.join(ctx.config.workspace.dir, second.runId);
  expect(statSync(path.join(workspace, 'tools', 'built.txt')).uid).toBe(statSync(workspace).uid);

  // A new commit on the repository: its HEAD moved, so the snapshot does not match.
  const head = commitToTools('CHANGELOG.md');
  const third = await lookAround(key, envId);
  expect(third.setupRan).toBe(true);
  expect(third.output).toContain(`head=${head}`);
  expect(third.built).not.toBe(first.built);
  expect(third.notices).toContain('Kept this workspace as the setup snapshot');

  // Changed setup commands: the configuration is part of the key.
  const update = await ctx.api
    .put(`/api/v1/agent/environments/${envId}`)
    .set(auth(key))
    .send({ config: { ...config, setup_commands: [...SETUP, 'echo second step'] } });
  expect(update.status).toBe(200);
  const fourth = await lookAround(key, envId);
  expect(fourth.setupRan).toBe(true);
  expect(fourth.built).not.toBe(third.built);
  // And the run after that starts from the new one.
  const fifth = await lookAround(key, envId);
  expect(fifth.setupRan).toBe(false);
  expect(fifth.built).toBe(fourth.built);
});

test("a snapshot serves only its own environment: another team's identical environment sets up itself, and an environment without setup_snapshot keeps none", async () => {
  const config = { name: 'tools', github_repos: [{ owner: 'acme', repo: 'tools' }], setup_commands: SETUP };
  const a = await ctx.newTeamKey();
  const aEnv = await createEnvironment(ctx, a.key, { ...config, setup_snapshot: true });
  expect((await lookAround(a.key, aEnv)).setupRan).toBe(true);
  const layers = snapshotLayers().length;

  const b = await ctx.newTeamKey();
  const bEnv = await createEnvironment(ctx, b.key, { ...config, setup_snapshot: true });
  const other = await lookAround(b.key, bEnv);
  expect(other.setupRan).toBe(true);
  expect(other.notices).not.toContain('restored the setup snapshot');

  const plainEnv = await createEnvironment(ctx, a.key, config);
  for (let i = 0; i < 2; i += 1) {
    const plain = await lookAround(a.key, plainEnv);
    expect(plain.setupRan).toBe(true);
    expect(plain.notices).not.toMatch(/snapshot/i);
  }
  // One more layer: team b's, none for the plain environment.
  expect(snapshotLayers().length).toBe(layers + 1);
});

test('a damaged snapshot is found before it is restored, removed, and the run sets up afresh and keeps a good one', async () => {
  const { key } = await ctx.newTeamKey();
  const envId = await createEnvironment(ctx, key, {
    name: 'tools',
    github_repos: [{ owner: 'acme', repo: 'tools' }],
    setup_commands: SETUP,
    setup_snapshot: true,
  });
  const before = new Set(snapshotLayers());
  const first = await lookAround(key, envId);
  const [layer] = snapshotLayers().filter((file) => !before.has(file));
  expect(layer).toBeDefined();
  appendFileSync(layer!, Buffer.alloc(1024, 7));
  const original = readFileSync(layer!);

  const second = await lookAround(key, envId);
  expect(second.notices).toMatch(
    /The setup snapshot [0-9a-f]{12} is damaged \(its layer is sha256:\w+, not sha256:\w+\) and was removed: setup runs again/,
  );
  expect(second.setupRan).toBe(true);
  expect(second.built).not.toBe(first.built);
  expect(second.notices).toContain('Kept this workspace as the setup snapshot');
  expect(readFileSync(layer!).equals(original)).toBe(false);
  const third = await lookAround(key, envId);
  expect(third.setupRan).toBe(false);
  expect(third.built).toBe(second.built);
});

test("on an image, setup's snapshot is restored onto the same digest; the tag moving to a new image runs setup again", async () => {
  const reference = `${registry.host}/tools/busy:snap`;
  const firstDigest = await pushImage(reference, busyboxFiles('marker-one'));
  const { key } = await ctx.newTeamKey();
  const envId = await createEnvironment(ctx, key, {
    name: 'busy-tools',
    docker_image: reference,
    github_repos: [{ owner: 'acme', repo: 'tools' }],
    // Busybox's shell and tools, on the image: what setup makes depends on the image.
    setup_commands: [
      'cat /marker > tools/built.txt && echo "$(date +%s)$RANDOM$RANDOM" >> tools/built.txt && echo run >> "$HOME/setup-runs"',
    ],
    setup_snapshot: true,
  });
  const run = () =>
    lookAround(key, envId, 'echo "built=$(tr "\\n" - < tools/built.txt) runs=$(wc -l < "$HOME/setup-runs")"');
  const first = await run();
  expect(first.setupRan).toBe(true);
  expect(first.built).toMatch(/^marker-one-\d+-$/);
  const second = await run();
  expect(second).toMatchObject({ built: first.built, setupRan: false });

  const secondDigest = await pushImage(reference, busyboxFiles('marker-two'));
  const third = await run();
  expect(third.setupRan).toBe(true);
  expect(third.built).toMatch(/^marker-two-\d+-$/);

  // Through the newest client: each workspace's timeline event names the digest it runs on,
  // the restored one's as the cloned ones'.
  const timelines = await warpClientCalls(
    ctx.baseUrl,
    key,
    [first, second, third].map((r) => ({ call: 'agent.runs.get_timeline', args: [r.runId] })),
  );
  type Timeline = { ok: { events: { event_type: string; payload: Record<string, unknown> }[] } };
  const ready = timelines.map((t) =>
    (t as Timeline).ok.events.filter((e) => e.event_type === 'worker_container_ready').map((e) => e.payload),
  );
  expect(ready).toEqual(
    [firstDigest, firstDigest, secondDigest].map((digest) => [
      expect.objectContaining({ image_reference: reference, image_digest: digest }),
    ]),
  );
  expect(String(ready[1]![0]!.message)).toContain('restored the setup snapshot');
});
