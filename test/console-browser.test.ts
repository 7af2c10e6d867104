import { mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page, type Response } from 'playwright-core';
import { gate } from './helpers/scripted-model';
import { auth, createRun, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

/**
 * The web console (/console) in real Chromium, against the whole service: signing in, the runs
 * list, a run's page following its event stream, its controls, and that nothing a run wrote can
 * run as script there. With CONSOLE_SCREENSHOTS=docs the screenshots of the guide
 * (docs/guide/console.md) are written to docs/images/; otherwise to a temporary directory.
 */
let ctx: TestContext;
let browser: Browser;
beforeAll(async () => {
  [ctx, browser] = await Promise.all([
    createTestContext(),
    chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    }),
  ]);
});
afterAll(async () => {
  await browser?.close();
  await ctx?.close();
});

jest.setTimeout(180_000);

const SHOTS =
  process.env.CONSOLE_SCREENSHOTS === 'docs'
    ? path.join(__dirname, '..', 'docs', 'images')
    : path.join(os.tmpdir(), 'console-screenshots');
mkdirSync(SHOTS, { recursive: true });

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

interface ConsolePage {
  page: Page;
  /** What the browser complained about: script errors, blocked resources, failed requests. */
  problems: string[];
  /** Every URL the page requested. */
  urls: string[];
  /** The Authorization header of each API request. */
  apiAuth: (string | undefined)[];
}

/** A fresh tab (its own sessionStorage) that records what the browser complained about. */
async function openTab(
  options: { viewport?: { width: number; height: number }; colorScheme?: 'light' | 'dark' } = {},
): Promise<ConsolePage> {
  const context = await browser.newContext({
    viewport: options.viewport ?? DESKTOP,
    colorScheme: options.colorScheme ?? 'light',
  });
  const page = await context.newPage();
  const tab: ConsolePage = { page, problems: [], urls: [], apiAuth: [] };
  page.on('console', (m) => {
    if (m.type() === 'error' && !/favicon/.test(m.location().url)) tab.problems.push(m.text());
  });
  page.on('pageerror', (e) => tab.problems.push(e.message));
  page.on('request', (r) => {
    tab.urls.push(r.url());
    if (new URL(r.url()).pathname.startsWith('/api/v1/')) tab.apiAuth.push(r.headers().authorization);
  });
  // "Cancel run" asks first.
  page.on('dialog', (d) => void d.accept());
  return tab;
}

/** Signs in through the sign-in page, with the keyboard only, and lands where `next` says. */
async function signIn(tab: ConsolePage, key: string, next = 'runs'): Promise<void> {
  await tab.page.goto(`${ctx.baseUrl}/console/${next}`);
  await tab.page.waitForURL(/\/console\/sign-in\?next=/);
  // The field has the focus: type the key, press Enter.
  await tab.page.getByLabel('API key').waitFor();
  await tab.page.keyboard.type(key);
  await tab.page.keyboard.press('Enter');
  await tab.page.waitForURL(new RegExp(`/console/${next}$`));
}

async function shot(page: Page, name: string): Promise<void> {
  // From the top of the page (a run's page follows its transcript down).
  await page.locator('h1').scrollIntoViewIfNeeded();
  await page.screenshot({ path: path.join(SHOTS, `console-${name}.png`) });
}

/** No script ran that the page did not serve: the flags the hostile strings would set stay unset. */
async function xssFlags(page: Page): Promise<unknown[]> {
  return page.evaluate(() => {
    const w = globalThis as unknown as Record<string, unknown>;
    return [w.__xss, w.__xssTitle, w.__xssPrompt, w.__xssOutput];
  });
}

function checkSecurityHeaders(response: Response | null): void {
  expect(response?.status()).toBe(200);
  const csp = response?.headers()['content-security-policy'] ?? '';
  expect(csp).toContain("script-src 'self'");
  expect(csp).toContain("style-src 'self'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).not.toContain('unsafe-inline');
  expect(csp).toContain("require-trusted-types-for 'script'");
}

const HOSTILE_OUTPUT = ['<img src=x onerror=window.__xssOutput=1>', '<script>window.__xssOutput=2</script>'];

test('sign in, find a run in the live list, watch it live, follow up without a reload; hostile text stays text', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('console');
  const answer = gate<{ text: string }>();
  ctx.model.script(marker, (_req, call) => {
    if (call === 1)
      return {
        text: 'Looking around.',
        toolCalls: [
          {
            name: 'run_command',
            arguments: { command: `printf '%s\\n' ${HOSTILE_OUTPUT.map((s) => `'${s}'`).join(' ')}` },
          },
          { name: 'write_file', arguments: { path: 'report.txt', content: 'the report\n' } },
        ],
      };
    if (call === 2)
      return { text: 'Uploading.', toolCalls: [{ name: 'upload_artifact', arguments: { filepath: 'report.txt' } }] };
    if (call === 3) return { hold: answer.promise };
    return { text: `Follow-up answered ${marker}` };
  });
  const title = `<img src=x onerror="window.__xssTitle=1"> Inspect ${marker}`;
  const prompt = `<script>window.__xssPrompt=1</script> Inspect the repository ${marker}`;
  const runId = await createRun(ctx, key, { title, prompt });
  await ctx.model.waitForCalls(marker, 3);

  const tab = await openTab();
  const { page } = tab;
  try {
    // A key the service refuses is refused on the sign-in page, and not kept.
    await page.goto(`${ctx.baseUrl}/console`);
    await page.waitForURL(/\/console\/sign-in\?next=runs$/);
    await page.getByLabel('API key').fill('ark_not_a_key_of_this_service');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'The service refused this key' }).waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    // The browser reports the refusal itself; nothing else.
    expect(tab.problems.filter((p) => !/status of 401/.test(p))).toEqual([]);
    tab.problems.length = 0;
    tab.apiAuth.length = 0;
    await page.getByLabel('API key').fill('');
    await signIn(tab, key);

    // The list: the run, its title as text, its state and creator; filters by state and text.
    const link = page.getByRole('link', { name: title });
    await link.waitFor();
    const row = page.locator('tr', { has: link });
    expect(await row.locator('td').first().innerText()).toBe('INPROGRESS');
    const stateFilter = page.getByLabel('State');
    await stateFilter.selectOption('SUCCEEDED');
    await page.getByText('No runs match.').waitFor();
    await stateFilter.selectOption('INPROGRESS');
    await link.waitFor();
    await page.getByLabel('Search').fill('no-such-run-anywhere');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No runs match.').waitFor();
    expect(new URL(page.url()).search).toBe('?state=INPROGRESS&q=no-such-run-anywhere');
    await page.getByLabel('Search').fill(marker);
    await page.getByRole('button', { name: 'Filter' }).click();
    await link.waitFor();
    await stateFilter.selectOption('');

    // Live: a run created now appears without a reload, above the older one.
    const second = `Second run ${marker}`;
    await createRun(ctx, key, { title: second, prompt: `Say hello ${uniqueName('second')}` });
    await page.getByRole('link', { name: second }).waitFor({ timeout: 30_000 });
    const titles = await page.locator('tbody tr td:nth-child(2)').allInnerTexts();
    expect(titles.indexOf(second)).toBeLessThan(titles.indexOf(title));
    await shot(page, 'runs-desktop-light');

    // Open the run with the keyboard.
    await link.focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(new RegExp(`/console/runs/${runId}$`));
    await runPageFollowsTheRun(tab, {
      runId,
      title,
      prompt,
      marker,
      release: () => answer.release({ text: `First answer ${marker}` }),
    });
    await shot(page, 'run-desktop-light');

    // Nothing hostile ran on either page, nothing failed, and the key went out only as a header.
    expect(await xssFlags(page)).toEqual([undefined, undefined, undefined, undefined]);
    expect(tab.problems).toEqual([]);
    expect(tab.urls.filter((u) => u.includes(key))).toEqual([]);
    expect(tab.apiAuth.length).toBeGreaterThan(5);
    expect(tab.apiAuth.every((a) => a === `Bearer ${key}`)).toBe(true);
  } finally {
    await page.context().close();
  }

  // The same pages in the dark and on a phone: readable, nothing wider than the screen.
  // The guide shows one page of each (`shoot`).
  const variants: [string, Parameters<typeof openTab>[0], 'runs' | 'run'][] = [
    ['desktop-dark', { colorScheme: 'dark' }, 'run'],
    ['phone-light', { viewport: PHONE }, 'runs'],
    ['phone-dark', { viewport: PHONE, colorScheme: 'dark' }, 'run'],
  ];
  for (const [name, options, shoot] of variants) {
    const other = await openTab(options);
    try {
      await signIn(other, key);
      await other.page.getByRole('link', { name: title }).waitFor();
      await looksRight(other.page, options);
      if (shoot === 'runs') await shot(other.page, `runs-${name}`);
      await other.page.goto(`${ctx.baseUrl}/console/runs/${runId}`);
      await other.page.getByText(`Follow-up answered ${marker}`).waitFor();
      await looksRight(other.page, options);
      if (shoot === 'run') await shot(other.page, `run-${name}`);
      expect(other.problems).toEqual([]);
    } finally {
      await other.page.context().close();
    }
  }
});

/** The run page: facts, the transcript as it happens, hostile text as text, an artifact's download, a follow-up. */
async function runPageFollowsTheRun(
  tab: ConsolePage,
  run: { runId: string; title: string; prompt: string; marker: string; release: () => void },
): Promise<void> {
  const { page } = tab;
  checkSecurityHeaders(await page.reload());
  let navigations = 0;
  page.on('framenavigated', (frame) => {
    if (frame === page.mainFrame()) navigations += 1;
  });
  // The shell first, then what the API says (the title among it).
  await page.locator('#run-state', { hasText: 'INPROGRESS' }).waitFor();
  expect(await page.locator('h1').innerText()).toBe(run.title);
  expect(await page.title()).toContain(run.title);
  // The prompt and the command's output, as written.
  await page.locator('article.prompt pre', { hasText: run.prompt }).waitFor();
  const output = page.locator('article.tool_call pre.output').filter({ hasText: HOSTILE_OUTPUT[0]! });
  await output.waitFor();
  expect((await output.innerText()).trim().split('\n')).toEqual(HOSTILE_OUTPUT);
  expect(await page.locator('article img, article script').count()).toBe(0);

  // The uploaded file downloads through its signed link.
  const artifacts = page.locator('#artifacts');
  await artifacts.getByText('report.txt').waitFor();
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    artifacts.getByRole('button', { name: 'Download' }).click(),
  ]);
  expect(download.suggestedFilename()).toBe('report.txt');

  // The agent answers: it appears, and the state follows, without a reload.
  run.release();
  await page.getByText(`First answer ${run.marker}`).waitFor();
  await page.locator('#run-state', { hasText: 'SUCCEEDED' }).waitFor();
  expect(await page.getByRole('button', { name: 'Interrupt' }).isDisabled()).toBe(true);
  // The run time as people read it, the API's ISO 8601 duration kept in the element.
  const runTime = page.locator('#facts time[datetime^="PT"]');
  await runTime.waitFor();
  expect(await runTime.innerText()).toMatch(/^(\d+ h )?(\d+ min )?\d+(\.\d+)? s$/);

  // A follow-up from the page, answered in the page.
  await page.getByLabel('Follow-up').fill('One more thing, please.');
  await page.getByRole('button', { name: 'Send' }).click();
  await page.locator('article.followup pre', { hasText: 'One more thing, please.' }).waitFor();
  await page.getByText(`Follow-up answered ${run.marker}`).waitFor();
  await page.locator('#run-state', { hasText: 'SUCCEEDED' }).waitFor();
  expect(await page.getByLabel('Follow-up').inputValue()).toBe('');
  expect(navigations).toBe(0);
  // Each entry once.
  const ids = await page.locator('article.event').evaluateAll((els) => els.map((el) => el.id));
  expect(new Set(ids).size).toBe(ids.length);
}

/** In the scheme asked for, and not wider than the screen. */
async function looksRight(page: Page, options: Parameters<typeof openTab>[0] = {}): Promise<void> {
  const background = await page
    .locator('body')
    .evaluate((el) => el.ownerDocument.defaultView!.getComputedStyle(el).backgroundColor);
  expect(background).toBe(options.colorScheme === 'dark' ? 'rgb(13, 17, 23)' : 'rgb(255, 255, 255)');
  const width = options.viewport?.width ?? DESKTOP.width;
  // Elements that reach past the right edge of the screen, by tag, id and class.
  const wider = await page
    .locator('body *')
    .evaluateAll(
      (els, w) =>
        els
          .filter((el) => el.getBoundingClientRect().right > w + 0.5)
          .map(
            (el) =>
              `${el.tagName.toLowerCase()}#${el.id}.${el.className} ${Math.round(el.getBoundingClientRect().right)}`,
          ),
      width,
    );
  expect(wider).toEqual([]);
}

test('cancel a running run from its page, then fork it from a checkpoint into a new run', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('console-cancel');
  const never = gate<{ text: string }>();
  ctx.model.script(marker, (_req, call) => {
    if (call === 1)
      return { text: 'Writing.', toolCalls: [{ name: 'run_command', arguments: { command: 'echo one > a.txt' } }] };
    if (call === 2) return { hold: never.promise };
    return { text: `Fork answered ${marker}` };
  });
  const runId = await createRun(ctx, key, { title: `Cancel me ${marker}`, prompt: `Work ${marker}` });
  await ctx.model.waitForCalls(marker, 2);

  const tab = await openTab();
  const { page } = tab;
  try {
    await signIn(tab, key, `runs/${runId}`);
    await page.locator('#run-state', { hasText: 'INPROGRESS' }).waitFor();
    const cancel = page.getByRole('button', { name: 'Cancel run' });
    await cancel.click();
    await page.locator('#run-state', { hasText: 'CANCELLED' }).waitFor();
    await page.locator('article.state', { hasText: 'CANCELLED' }).waitFor();
    expect(await cancel.isDisabled()).toBe(true);
    await waitForState(ctx, key, runId, ['CANCELLED']);

    // Its checkpoints: as provisioned, and after the command. Fork from the later one.
    const checkpoints = page.locator('#checkpoints li[data-checkpoint-id]');
    await waitFor(
      () => checkpoints.count(),
      (n) => n >= 2,
      'two checkpoints on the page',
    );
    const afterCommand = checkpoints.filter({ hasText: 'step 1' }).first();
    const checkpointId = await afterCommand.getAttribute('data-checkpoint-id');
    await afterCommand.getByRole('button', { name: 'Fork' }).click();
    await page.waitForURL(
      (url) => /\/console\/runs\/[0-9a-f-]{36}$/.test(url.pathname) && !url.pathname.endsWith(runId),
    );
    const forkId = page.url().split('/').at(-1)!;
    await page.getByText(`Fork answered ${marker}`).waitFor();
    const forkedFrom = page.locator('#facts a', { hasText: runId });
    expect(await forkedFrom.getAttribute('href')).toBe(`${ctx.baseUrl}/console/runs/${runId}`);
    const fork = await ctx.api.get(`/api/v1/agent/runs/${forkId}`).set(auth(key));
    expect(fork.body.forked_from).toEqual({ run_id: runId, checkpoint_id: checkpointId });
    expect(tab.problems).toEqual([]);
    expect(tab.urls.filter((u) => u.includes(key))).toEqual([]);
  } finally {
    await page.context().close();
  }
});

test("the team's schedules and agents, read-only; every page served with its policy, none with a script error", async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('console-lists');
  const agentName = `<b>reviewer</b>-${marker}`;
  const identity = await ctx.api.post('/api/v1/agent/identities').set(auth(key)).send({ name: agentName });
  expect(identity.status).toBe(201);
  const schedule = await ctx.api
    .post('/api/v1/agent/schedules')
    .set(auth(key))
    .send({ name: `Nightly <i>check</i> ${marker}`, cron_schedule: '0 9 * * *', prompt: `Check ${marker}` });
  expect(schedule.status).toBe(201);

  const tab = await openTab();
  const { page } = tab;
  try {
    await signIn(tab, key, 'schedules');
    checkSecurityHeaders(await page.reload());
    const scheduleRow = page.locator('tbody tr', { hasText: `Nightly <i>check</i> ${marker}` });
    await scheduleRow.waitFor();
    expect(await scheduleRow.locator('code').innerText()).toBe('0 9 * * *');
    expect(await page.locator('tbody i, tbody b').count()).toBe(0);
    await shot(page, 'schedules-desktop-light');

    await page.getByRole('link', { name: 'Agents' }).click();
    await page.waitForURL(/\/console\/agents$/);
    await page.locator('tbody tr', { hasText: agentName }).waitFor();
    expect(await page.locator('tbody i, tbody b').count()).toBe(0);

    // Signing out forgets the key: the console asks for one again.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/console\/sign-in$/);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.goto(`${ctx.baseUrl}/console/agents`);
    await page.waitForURL(/\/console\/sign-in\?next=agents$/);
    expect(tab.problems).toEqual([]);
  } finally {
    await page.context().close();
  }

  const phone = await openTab({ viewport: PHONE });
  try {
    await phone.page.goto(`${ctx.baseUrl}/console/sign-in`);
    await looksRight(phone.page, { viewport: PHONE });
    await shot(phone.page, 'sign-in-phone-light');
    // The console's files: its own, as written, and never framed or sniffed.
    for (const file of ['api.js', 'console.css', 'vendor/eventsource-parser/stream.js']) {
      const res = await ctx.api.get(`/console/assets/${file}`);
      expect([file, res.status, res.headers['x-content-type-options']]).toEqual([file, 200, 'nosniff']);
    }
    expect((await ctx.api.get('/console/assets/missing.js')).status).toBe(404);
    expect((await ctx.api.get('/console/runs/not-a-run')).status).toBe(404);
    expect(phone.problems).toEqual([]);
  } finally {
    await phone.page.context().close();
  }
});

test('a pending approval shows on the run page; Approve with a comment lets the command run', async () => {
  const team = uniqueName('console-approvals');
  const { key } = await ctx.newTeamKey('personal', team, 'admin');
  const marker = uniqueName('console-approve');
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? { text: '', toolCalls: [{ name: 'run_command', arguments: { command: `echo shipped-${marker}` } }] }
      : { text: `done ${marker}` },
  );
  const runId = await createRun(ctx, key, {
    prompt: `Ship ${marker}`,
    config: { approval: { commands: ['echo shipped-*'] } },
  });
  await waitForState(ctx, key, runId, ['BLOCKED']);

  const tab = await openTab();
  const { page } = tab;
  try {
    await signIn(tab, key, `runs/${runId}`);
    await page.locator('#run-state', { hasText: 'BLOCKED' }).waitFor();
    await page.getByText(`echo shipped-${marker}`).first().waitFor();
    await page.getByLabel('Comment').fill('looks safe');
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.locator('#run-state', { hasText: 'SUCCEEDED' }).waitFor();
    await page.getByText(`done ${marker}`).waitFor();
    const decided = (await ctx.dataSource.query(`SELECT state, comment FROM run_approvals WHERE run_id = $1`, [
      runId,
    ])) as { state: string; comment: string }[];
    expect(decided).toEqual([{ state: 'approved', comment: 'looks safe' }]);
    expect(tab.problems).toEqual([]);
  } finally {
    await page.context().close();
  }
});
