import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { gate } from './helpers/scripted-model';
import { createRun, getRun, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';
import { sessionLinkQuery } from './helpers/session-links';

/** The transcript page behind `session_link`, as a browser renders it. */
let ctx: TestContext;
let browser: Browser;
beforeAll(async () => {
  [ctx, browser] = await Promise.all([
    createTestContext(),
    chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    }),
  ]);
});
afterAll(async () => {
  await browser?.close();
  await ctx?.close();
});

/** A fresh page that records what the browser complained about (a blocked inline style, a script error). */
async function openPage(): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && !/favicon/.test(m.location().url)) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  return { page, problems };
}

/** A computed style of the element, as the browser applies the page's stylesheet. */
function styleOf(locator: Locator, property: 'color' | 'backgroundColor'): Promise<string> {
  return locator.evaluate((el, prop) => el.ownerDocument.defaultView!.getComputedStyle(el)[prop] as string, property);
}

const COMMAND = "printf 'line %s\\n' $(seq 1 40)";

test('a finished run: title, the command, its folded output, the diff of the written file', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('browser');
  ctx.model.script(marker, (_req, call) => {
    if (call === 1)
      return { text: 'Counting to forty.', toolCalls: [{ name: 'run_command', arguments: { command: COMMAND } }] };
    if (call === 2)
      return {
        text: 'Writing notes.',
        toolCalls: [{ name: 'write_file', arguments: { path: 'notes.txt', content: 'hello from the agent\n' } }],
      };
    return { text: 'All done: counted and wrote notes.txt.' };
  });
  const title = `Browser transcript <${marker}>`;
  const runId = await createRun(ctx, key, { prompt: `Count and write ${marker}`, title });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const link = run.session_link as string;
  expect(link).toMatch(
    new RegExp(`^${ctx.baseUrl}/sessions/[A-Za-z0-9_-]{32}\\?expires=\\d+&signature=[A-Za-z0-9_-]{43}$`),
  );

  const { page, problems } = await openPage();
  try {
    const response = await page.goto(link, { waitUntil: 'load' });
    expect(response?.status()).toBe(200);
    // The title is escaped into <title> and shown as text, not markup.
    expect(await page.title()).toContain(title);
    expect(await page.locator('h1').innerText()).toBe(title);
    expect(await page.locator('#state').innerText()).toBe('SUCCEEDED');
    expect(await page.locator('#live').count()).toBe(0);
    expect(await page.locator('meta[http-equiv="refresh"]').count()).toBe(0);
    // The prompt reads as text, not greyed out like the metadata around it.
    const textColour = await styleOf(page.locator('body'), 'color');
    const prompt = page.locator('section.prompt pre').filter({ hasText: `Count and write ${marker}` });
    expect(await styleOf(prompt, 'color')).toBe(textColour);

    // The command, as typed, is visible.
    const commandSection = page.locator('section.tool_call').filter({ has: page.locator('.command code') });
    expect(await commandSection.count()).toBe(1);
    const command = commandSection.locator('.command code');
    expect(await command.isVisible()).toBe(true);
    expect(await command.innerText()).toBe(COMMAND);
    expect(await commandSection.locator('.exit').innerText()).toBe('0');

    // Its 40 lines of output are folded; a click unfolds them.
    const fold = commandSection.locator('details.fold');
    expect(await fold.count()).toBe(1);
    expect(await fold.locator('summary').innerText()).toBe('Output (40 lines)');
    const output = fold.locator('pre.output');
    expect(await fold.getAttribute('open')).toBeNull();
    expect(await output.isVisible()).toBe(false);
    await fold.locator('summary').click();
    await output.waitFor({ state: 'visible', timeout: 5_000 });
    expect(await fold.getAttribute('open')).not.toBeNull();
    const lines = (await output.innerText()).split('\n');
    expect(lines).toContain('line 1');
    expect(lines).toContain('line 37');
    expect(lines).toContain('line 40');
    expect(await page.getByText('line 37').isVisible()).toBe(true);

    // The written file's diff, its added line marked (and styled: the inline stylesheet is allowed).
    const file = page.locator('section.files_changed .file').filter({ hasText: 'notes.txt' });
    expect(await file.count()).toBeGreaterThanOrEqual(1);
    expect(await file.first().locator('.path').innerText()).toBe('notes.txt');
    const added = file.first().locator('pre.diff .add');
    expect(await added.allInnerTexts()).toEqual(['+hello from the agent']);
    expect(await added.first().isVisible()).toBe(true);
    expect(await styleOf(added.first(), 'backgroundColor')).toBe('rgb(218, 251, 225)');
    // One diff line per row: each line starts where the one before it ends (no blank rows between them).
    const rows = await file
      .first()
      .locator('pre.diff span')
      .evaluateAll((spans) =>
        spans.map((el) => el.getBoundingClientRect()).map((r) => ({ top: r.top, bottom: r.bottom })),
      );
    expect(rows.length).toBeGreaterThan(3);
    const gaps = rows.slice(1).map((r, i) => Math.round(r.top - rows[i]!.bottom));
    expect(gaps.every((gap) => gap === 0)).toBe(true);

    // The agent's final answer closes the transcript.
    expect(await page.getByText('All done: counted and wrote notes.txt.').isVisible()).toBe(true);
    expect(problems).toEqual([]);

    const shot = path.join(os.tmpdir(), `session-page-${runId}.png`);
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`session page screenshot: ${shot}`);
  } finally {
    await page.close();
  }
});

test('a run still in progress shows the live marker and follows the run without reloading until it ends', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('browser-live');
  const hold = gate<{ text: string }>();
  ctx.model.script(marker, () => ({ hold: hold.promise }));
  const runId = await createRun(ctx, key, { prompt: `Think slowly ${marker}`, title: `Live ${marker}` });
  const run = await waitForState(ctx, key, runId, ['INPROGRESS']);
  await ctx.model.waitForCalls(marker, 1);

  const { page, problems } = await openPage();
  try {
    expect((await page.goto(run.session_link as string))?.status()).toBe(200);
    expect(await page.title()).toContain(`Live ${marker}`);
    expect(await page.locator('#state').innerText()).toBe('INPROGRESS');
    expect(await page.locator('#live').isVisible()).toBe(true);
    expect(await page.locator('#live').innerText()).toMatch(/live/i);
    // No reloading: the page's script (from 'self') follows the session's event stream.
    expect(await page.locator('meta[http-equiv="refresh"]').count()).toBe(0);
    expect(await page.locator('script[src="live.js"]').count()).toBe(1);
    let navigations = 0;
    page.on('framenavigated', (frame) => {
      if (frame === page.mainFrame()) navigations += 1;
    });
    await page.evaluate(() => ((globalThis as unknown as { loadedOnce: boolean }).loadedOnce = true));

    // Let the agent answer: its message and the end appear in the open page.
    hold.release({ text: 'Finished thinking.' });
    await page.getByText('Finished thinking.').waitFor({ timeout: 15_000 });
    await page.locator('#state', { hasText: 'SUCCEEDED' }).waitFor({ timeout: 15_000 });
    expect(await page.locator('#live').count()).toBe(0);
    expect(navigations).toBe(0);
    expect(await page.evaluate(() => (globalThis as unknown as { loadedOnce?: boolean }).loadedOnce)).toBe(true);
    // The same page: a later read signs a link of its own to it.
    expect(new URL((await getRun(ctx, key, runId)).session_link as string).pathname).toBe(
      new URL(run.session_link as string).pathname,
    );

    // One definition of how an event looks: what arrived live is what a fresh page shows.
    const ids = (await ctx.dataSource.query(`SELECT id, kind FROM run_events WHERE run_id = $1 ORDER BY id`, [
      runId,
    ])) as { id: string; kind: string }[];
    const answer = ids.filter((e) => e.kind === 'assistant').at(-1)!;
    const live = await page.locator(`#event-${answer.id}`).evaluate((el) => el.outerHTML);
    const fresh = await browser.newPage();
    try {
      await fresh.goto(run.session_link as string);
      expect(await fresh.locator(`#event-${answer.id}`).evaluate((el) => el.outerHTML)).toBe(live);
      // Every event the page shows, in the same order.
      const sections = (p: Page) => p.locator('section.event').evaluateAll((els) => els.map((el) => el.id));
      expect(await sections(page)).toEqual(await sections(fresh));
    } finally {
      await fresh.close();
    }
    expect(problems).toEqual([]);
  } finally {
    await page.close();
  }
});

test('a link without its signature, or one that expired, shows a page that says so and how to get a fresh one', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('browser-expired');
  ctx.model.script(marker, () => ({ text: `Secret answer ${marker}.` }));
  const runId = await createRun(ctx, key, { prompt: `Answer ${marker}`, title: `Expired ${marker}` });
  const run = await waitForState(ctx, key, runId, ['SUCCEEDED']);
  const sessionId = run.session_id as string;
  const expiredAt = Math.floor(Date.now() / 1000) - 60;
  const { page, problems } = await openPage();
  try {
    for (const [href, heading] of [
      [`${ctx.baseUrl}/sessions/${sessionId}`, 'This transcript link is not valid'],
      [
        `${ctx.baseUrl}/sessions/${sessionId}?${sessionLinkQuery(ctx, sessionId, expiredAt)}`,
        'This transcript link has expired',
      ],
    ] as const) {
      expect((await page.goto(href))?.status()).toBe(403);
      expect(await page.locator('h1').innerText()).toBe(heading);
      const text = await page.locator('body').innerText();
      expect(text).toContain('Get a fresh link by reading the run again');
      expect(text).toContain('agent-runs get <run_id>');
      expect(text).not.toContain(marker);
      expect(await page.locator('script, section.event').count()).toBe(0);
    }
    // The browser reports the 403s themselves; nothing else (no blocked style, no script).
    expect(problems.filter((p) => !/status of 403/.test(p))).toEqual([]);
  } finally {
    await page.close();
  }
});
