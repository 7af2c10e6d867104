import { readFileSync } from 'node:fs';
import { DIAGNOSTIC_CODES } from '../core/factory-tree/diagnostics';
import { parseChild } from '../services/untrusted-parse/untrusted-parser';
import {
  ALIAS_BOMB,
  DEEP_FLOW,
  DEEP_FRONT_MATTER,
  deepInputs,
  hostileMarkdown,
  hugeInputs,
  seededRandom,
  SHALLOW_LOOKALIKES,
  yamlSoup,
} from './helpers/hostile-yaml';
import { auth } from './helpers/runs';
import { createTestContext, waitFor, type TestContext } from './helpers/test-context';

/**
 * Issue 42: bodies sent without a key to `POST /factory-files/validate` (an alias bomb, fifty
 * thousand `[`) killed the whole service process now and then. Now every one of them is a 200
 * that names the limit, answered by the service's parse child, which a hostile file does not
 * kill, and which is started again when something else does.
 */

const VALIDATE = '/api/v1/factory-files/validate';
const TREE = [
  { path: 'factory.yaml', content: 'name: team\ndescription: A team\n' },
  { path: 'agents/lead/agent.md', content: '---\nagent_type: FOREMAN\n---\nLead the team.\n' },
];
const CODES: string[] = Object.values(DIAGNOSTIC_CODES);

let ctx: TestContext;
beforeAll(async () => {
  // Many validations from one address in a minute: the point here is what each one costs.
  ctx = await createTestContext({ worker: false, env: { RATE_LIMIT_FACTORY_VALIDATE_PER_MINUTE: '0' } });
});
afterAll(async () => {
  await ctx?.close();
});

test("the issue's requests, again and again: each a 200 naming the limit, and the parse child never dies of them", async () => {
  expect((await ctx.api.post(VALIDATE).send({ files: TREE })).body.valid).toBe(true);
  const pid = parseChild().pid;
  for (let round = 0; round < 10; round++) {
    const res = await ctx.api.post(VALIDATE).send({
      files: [
        { path: 'factory.yaml', content: round % 2 ? DEEP_FLOW : ALIAS_BOMB },
        { path: 'agents/a/agent.md', content: DEEP_FRONT_MATTER },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      valid: false,
      diagnostics: [
        {
          code: 'FF_YAML_LIMIT',
          path: 'agents/a/agent.md',
          line: 2,
          column: 67,
          message: expect.stringContaining('deeper than 64 levels'),
        },
        { code: 'FF_YAML_LIMIT', path: 'factory.yaml', message: round % 2 ? /deeper than 64/ : /alias/i },
      ],
    });
  }
  expect(parseChild().pid).toBe(pid);
  expect((await ctx.api.post(VALIDATE).send({ files: TREE })).body.valid).toBe(true);
});

test('every hostile input of the fuzz test, as a factory.yaml, as front matter and as an agent.md: a 200 with diagnostics, never a 500', async () => {
  const random = seededRandom(42);
  const inputs = [
    ...Object.values({ ...deepInputs(), ...SHALLOW_LOOKALIKES, ...hugeInputs(100 * 1024) }),
    ...Array.from({ length: 20 }, () => yamlSoup(random, 1 + Math.floor(random() * 8192))),
  ];
  const trees = [
    ...inputs.map((yaml) => [
      { path: 'factory.yaml', content: yaml },
      { path: 'agents/a/agent.md', content: `---\n${yaml}\n---\nThe prompt.\n` },
    ]),
    ...Object.values(hostileMarkdown(100 * 1024)).map((markdown) => [
      TREE[0]!,
      { path: 'agents/a/agent.md', content: markdown },
    ]),
  ];
  for (const files of trees) {
    const res = await ctx.api.post(VALIDATE).send({ files });
    expect(res.status).toBe(200);
    const diagnostics = res.body.diagnostics as { code: string; message: string }[];
    expect(diagnostics.length).toBeGreaterThan(0);
    expect(diagnostics.filter((d) => !CODES.includes(d.code) || /call stack|RangeError/i.test(d.message))).toEqual([]);
  }
});

test('a FACTORY.md nested too deep, sent to the authenticated validation: a 200 naming the limit', async () => {
  const { key } = await ctx.newTeamKey();
  const res = await ctx.api
    .post('/api/v1/agent/factories/validate')
    .set(auth(key))
    .send({ content: `---\nname: team\ndescription: ${'['.repeat(50_000)}\n---\n` });
  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    valid: false,
    errors: [
      { path: 'front_matter', message: expect.stringMatching(/^YAML error at line 3, column 77: .*deeper than 64/) },
    ],
  });
});

test('a parse child killed between requests is started again: the next request is answered as before', async () => {
  expect((await ctx.api.post(VALIDATE).send({ files: TREE })).body.valid).toBe(true);
  const pid = parseChild().pid!;
  process.kill(pid, 'SIGKILL');
  await waitFor(
    async () => parseChild().pid,
    (now) => now !== pid,
    'the parse child to be noticed dead',
  );
  const res = await ctx.api.post(VALIDATE).send({ files: TREE });
  expect(res.status).toBe(200);
  expect(res.body.valid).toBe(true);
  expect(parseChild().pid).toEqual(expect.any(Number));
  expect(parseChild().pid).not.toBe(pid);
});

test('a parse child killed while it parses a request: that request is answered FF_PARSE_LIMIT, the next one as before', async () => {
  expect((await ctx.api.post(VALIDATE).send({ files: TREE })).body.valid).toBe(true);
  const pid = parseChild().pid!;
  // Four files of 250,000 YAML errors each: seconds of parsing, long enough to be caught at it.
  const slow = ['factory.yaml', 'agents/a/agent.md', 'agents/b/agent.md', 'agents/c/agent.md'].map((path, i) => ({
    path,
    content: i === 0 ? ']'.repeat(250_000) : `---\n${']'.repeat(249_990)}\n---\n`,
  }));
  const cpuTicks = () => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[11]);
  const before = cpuTicks();
  const answer = ctx.api
    .post(VALIDATE)
    .send({ files: slow })
    .then((res) => res);
  await waitFor(
    async () => cpuTicks(),
    (ticks) => ticks > before + 20,
    'the parse child to be parsing the request',
  );
  process.kill(pid, 'SIGKILL');
  const res = await answer;
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({
    valid: false,
    diagnostics: [
      {
        code: 'FF_PARSE_LIMIT',
        path: 'factory.yaml',
        message: expect.stringMatching(
          /^the tree could not be parsed within this service's limits: its parser stopped/,
        ),
      },
    ],
    validation_scope: { parser: 'not_run' },
  });
  expect((await ctx.api.post(VALIDATE).send({ files: TREE })).body.valid).toBe(true);
});
