import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensurePythonClient, PYTHON_CLIENT } from '../infra/python-client';
import { gate } from './helpers/scripted-model';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

const run = promisify(execFile);

/**
 * The official Python client (`oz-agent-sdk==0.15.0`) against the test stack, with strict
 * response validation: every one of its 23 endpoints, driven by test/contract/python_client_contract.py.
 */
let ctx: TestContext;
let python: string;
beforeAll(async () => {
  python = await ensurePythonClient();
  ctx = await createTestContext();
}, 360_000);
afterAll(async () => {
  await ctx?.close();
});

const ENDPOINTS = [
  'agent.run',
  'agent.list',
  'agent.list_environments',
  'agent.get_artifact',
  'runs.retrieve',
  'runs.list',
  'runs.submit_followup',
  'runs.cancel',
  'runs.list_handoff_attachments',
  'identities.create',
  'identities.get',
  'identities.list',
  'identities.update',
  'identities.delete',
  'schedules.create',
  'schedules.retrieve',
  'schedules.list',
  'schedules.update',
  'schedules.pause',
  'schedules.resume',
  'schedules.delete',
  'sessions.check_redirect',
  'conversations.check_redirect',
];

test(`${PYTHON_CLIENT} drives every endpoint with strict response validation`, async () => {
  const { key } = await ctx.newTeamKey('personal', undefined, 'admin');
  const marker = uniqueName('py-contract');
  const workMarker = uniqueName('py-work');
  const held = gate<{ text: string }>();
  ctx.model.script(marker, (req) =>
    req.messages[0]?.content.includes('Held') ? { hold: held.promise } : { text: `answered ${marker}` },
  );
  ctx.model.script(workMarker, (_req, call) =>
    call === 1
      ? {
          text: '',
          toolCalls: [
            { name: 'write_file', arguments: { path: 'notes.txt', content: 'contract notes\n' } },
            { name: 'upload_artifact', arguments: { filepath: 'notes.txt', title: 'Notes' } },
          ],
        }
      : { text: 'done' },
  );
  let out: { stdout: string; stderr: string };
  try {
    out = await run(python, [path.join(__dirname, 'contract', 'python_client_contract.py')], {
      env: {
        ...process.env,
        OZ_API_BASE_URL: `${ctx.baseUrl}/api/v1`,
        WARP_API_KEY: key,
        MARKER: marker,
        WORK_MARKER: workMarker,
      },
      timeout: 240_000,
    });
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    throw new Error(`the Python client failed:\n${stderr ?? ''}\n${stdout ?? ''}`);
  } finally {
    held.release({ text: 'late' });
  }
  const { called } = JSON.parse(out.stdout.trim().split('\n').pop()!) as { called: string[] };
  expect([...new Set(called)].sort()).toEqual([...ENDPOINTS].sort());
}, 300_000);
