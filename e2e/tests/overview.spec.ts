import { expect, test, type APIRequestContext, type Page } from '@playwright/test';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { API_URL, DASHBOARD_URL, E2E_API_KEY } from '../stack';
import { failOnConsoleErrors } from '../console-errors';
import { tabThroughControls } from '../keyboard';

/**
 * The Overview against the real stack: compactions are produced by the worker from real agent
 * turns appended through the public API, then the page is read with the key entered in Settings
 * and compared with what the API itself answers.
 */

const screenshotDir = resolve(__dirname, '../../test-results/screenshots');
const screenshot = (page: Page, name: string) => page.screenshot({ path: resolve(screenshotDir, `${name}.png`), fullPage: true });

const DATA = resolve(__dirname, '../../testdata/swe-agent-trajectories');
const trajectory = (file: string) => JSON.parse(readFileSync(resolve(DATA, file), 'utf8')).history as Record<string, unknown>[];
const FILES = readdirSync(DATA)
  .filter((f) => f.endsWith('.traj'))
  .sort();
/** Two real SWE-agent runs one after the other: long enough for several compactions in a small window. */
const HISTORY = [...trajectory(FILES[0]), ...trajectory(FILES[1]).filter((m) => m.role !== 'system')];

const uid = (label: string) => `${label}-${randomBytes(4).toString('hex')}`;
const int = (n: number) => n.toLocaleString('en-US');

interface Summary {
  tokensSaved: number;
  compactions: { total: number; succeeded: number; skipped: number; failed: number; queued: number; running: number };
  compactionsPerDay: { day: string; count: number; succeeded: number; skipped: number; failed: number; tokensSaved: number; llmCalls: number; llmTokens: number; llmCostUsd: number }[];
  compressionRatios: { median: number | null; buckets: { from: number; to: number; count: number }[] };
  sessionsNearBudget: { count: number; sessions: { id: string; utilization: number }[] };
  llm: { calls: number; costUsd: number };
}

// Every test fails on a console error or an uncaught exception in the page.
failOnConsoleErrors(test);

let api: APIRequestContext;
const compactedId = uid('overview-compacted');
const nearId = uid('overview-near');

/** The summary query the dashboard sends for the last `days` UTC days. */
function rangeQuery(days: number): string {
  const now = new Date();
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  return `from=${day(today - (days - 1) * 86_400_000)}&to=${day(today)}`;
}

async function apiSummary(days: number): Promise<Summary> {
  const res = await api.get(`/v1/analytics/summary?${rangeQuery(days)}`);
  expect(res.status()).toBe(200);
  return res.json();
}

/** Waits until no compaction of the tenant is queued or running, so the page and the API see the same numbers. */
async function settled(): Promise<Summary> {
  await expect.poll(async () => {
    const s = await apiSummary(90);
    return s.compactions.queued + s.compactions.running;
  }, { timeout: 60_000, message: 'compactions still queued or running' }).toBe(0);
  return apiSummary(90);
}

async function enterKey(page: Page) {
  await page.goto('/settings');
  const form = page.getByRole('form', { name: 'Enter the API key' });
  await form.getByLabel('API key', { exact: true }).fill(E2E_API_KEY);
  await form.getByRole('button', { name: 'Save key' }).click();
  await expect(page.getByTestId('key-saved')).toBeVisible();
}

test.beforeAll(async ({ playwright }) => {
  test.setTimeout(180_000);
  api = await playwright.request.newContext({ baseURL: API_URL, extraHTTPHeaders: { Authorization: `Bearer ${E2E_API_KEY}` } });

  // A real session in a 16k window: the worker compacts it as it grows; each run is awaited before the next append.
  for (let i = 0; i < HISTORY.length; i += 8) {
    const res = await api.post(`/v1/sessions/${compactedId}/messages`, {
      data: { model: 'gpt-4o', contextWindow: 16_000, outputReserve: 2_000, policy: 'balanced', format: 'openai', messages: HISTORY.slice(i, i + 8) },
    });
    expect(res.status(), await res.text()).toBe(201);
    const { compaction } = await res.json();
    if (compaction.jobId) {
      await expect
        .poll(async () => (await (await api.get(`/v1/jobs/${compaction.jobId}`)).json()).status, { timeout: 30_000 })
        .toMatch(/^(succeeded|skipped|failed)$/);
    }
  }

  // A session at ~90% of its budget whose trigger is at 100%, so it stays near its budget.
  const policy = { preset: 'balanced', overrides: { triggerFraction: 1 } };
  let res = await api.post(`/v1/sessions/${nearId}/messages`, {
    data: { model: 'gpt-4o', contextWindow: 4_096, outputReserve: 0, policy, messages: [{ role: 'user', content: 'start' }] },
  });
  let body = await res.json();
  for (const role of ['assistant', 'user']) {
    const gap = Math.floor(body.usage.budget * 0.9) - body.usage.contextTokens;
    res = await api.post(`/v1/sessions/${nearId}/messages`, { data: { messages: [{ role, content: 'word '.repeat(Math.max(gap, 1)) }] } });
    body = await res.json();
  }
  expect(body.usage.utilization).toBeGreaterThanOrEqual(0.8);
});

test.afterAll(async () => {
  await api?.dispose();
});

test('without a key, the Overview points to Settings and still shows the API readiness', async ({ page }) => {
  await page.goto('/');
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Overview');
  const notice = page.getByTestId('key-notice');
  await expect(notice).toHaveAttribute('data-state', 'no-key');
  await expect(notice).toContainText('No API key entered yet');
  await expect(notice.getByRole('link', { name: 'Go to Settings' })).toHaveAttribute('href', '/settings');
  await expect(page.getByRole('region', { name: 'API readiness' })).toBeVisible();
  await expect(page.getByTestId('chart-compactions')).toHaveCount(0);
  await screenshot(page, 'overview-no-key');

  await notice.getByRole('link', { name: 'Go to Settings' }).click();
  await expect(page).toHaveURL('/settings');
});

test('a revoked key is reported as rejected, not as an empty overview', async ({ page, context }) => {
  const created = await (await api.post('/v1/keys', { data: { name: uid('overview-revoked'), scopes: ['read'] } })).json();
  expect((await api.delete(`/v1/keys/${created.id}`)).status()).toBe(200);
  // As if it had been entered in Settings before it was revoked.
  await context.addCookies([{ name: 'compactor_api_key', value: created.key, url: DASHBOARD_URL, httpOnly: true, sameSite: 'Strict' }]);

  await page.goto('/');
  const notice = page.getByTestId('key-notice');
  await expect(notice).toHaveAttribute('data-state', 'rejected-401');
  await expect(notice).toContainText('The API rejected the saved key');
  await expect(notice.getByRole('link', { name: 'Go to Settings' })).toBeVisible();
  await screenshot(page, 'overview-key-rejected');
});

test('the figures and charts show what the API reports, for 7, 30 and 90 days', async ({ page }) => {
  const all = await settled();
  expect(all.compactions.succeeded, 'the seeded session was compacted').toBeGreaterThan(0);
  await enterKey(page);

  for (const days of [30, 7, 90]) {
    if (days === 30) await page.goto('/');
    else await page.getByRole('navigation', { name: 'Date range' }).getByRole('link', { name: `${days} days` }).click();
    await expect(page).toHaveURL(days === 30 ? '/' : `/?range=${days}`);
    await expect(page.getByRole('navigation', { name: 'Date range' }).getByRole('link', { name: `${days} days` })).toHaveAttribute('aria-current', 'page');
    const s = await apiSummary(days);
    expect(s.compactionsPerDay).toHaveLength(days);

    await expect(page.getByTestId('stat-tokens-saved-value')).toHaveText(int(s.tokensSaved));
    await expect(page.getByTestId('stat-compactions-value')).toHaveText(int(s.compactions.total));
    await expect(page.getByTestId('stat-median-ratio-value')).toHaveText(`${Math.round(s.compressionRatios.median! * 100)}%`);
    await expect(page.getByTestId('stat-near-budget-value')).toHaveText(int(s.sessionsNearBudget.count));
    await expect(page.getByTestId('stat-compactions')).toContainText(`${int(s.compactions.succeeded)} succeeded · ${int(s.compactions.skipped)} skipped · ${int(s.compactions.failed)} failed`);

    // Compactions per day: a row per day in the data table; a bar per day with a non-zero count of each outcome.
    const compactions = page.getByTestId('chart-compactions');
    await expect(compactions.locator('table tbody tr')).toHaveCount(days);
    const rows = compactions.locator('table tbody tr');
    for (const [i, d] of s.compactionsPerDay.entries()) {
      if (d.count === 0 && i !== days - 1) continue;
      await expect(rows.nth(i).locator('td')).toHaveText([int(d.succeeded), int(d.skipped), int(d.failed), int(d.count - d.succeeded - d.skipped - d.failed)]);
    }
    const series = compactions.locator('.recharts-bar-rectangles');
    await expect(series.first()).toBeAttached();
    for (const [i, key] of (['succeeded', 'skipped', 'failed'] as const).entries()) {
      await expect(series.nth(i).locator('.recharts-bar-rectangle')).toHaveCount(s.compactionsPerDay.filter((d) => d[key] > 0).length);
    }

    // Tokens saved per day: a dot for every day of the range, zeros included.
    const saved = page.getByTestId('chart-tokens-saved');
    await expect(saved.locator('.recharts-area-dots .recharts-area-dot, .recharts-area-dots circle').first()).toBeAttached();
    await expect(saved.locator('.recharts-area-dots circle')).toHaveCount(days);
    await expect(page.getByTestId('chart-tokens-saved-summary')).toContainText(`${int(s.tokensSaved)} tokens saved in ${days} days`);

    // Summarizer cost per day: a row per day with the API's calls and tokens (the local summarizer costs nothing).
    const cost = page.getByTestId('chart-llm-cost');
    await expect(cost.locator('table tbody tr')).toHaveCount(days);
    const costRows = cost.locator('table tbody tr');
    for (const [i, d] of s.compactionsPerDay.entries()) {
      if (d.llmCalls === 0 && i !== days - 1) continue;
      await expect(costRows.nth(i).locator('td')).toHaveText(['$0.00', int(d.llmCalls), int(d.llmTokens)]);
    }
    expect(s.compactionsPerDay.reduce((n, d) => n + d.llmCalls, 0)).toBe(s.llm.calls);

    // The histogram: ten buckets, counts as the API gives them.
    const ratio = page.getByTestId('chart-ratio');
    const counts = await ratio.locator('table tbody td').allTextContents();
    expect(counts.map((c) => Number(c.replace(/,/g, '')))).toEqual(s.compressionRatios.buckets.map((b) => b.count));
    await expect(ratio.locator('.recharts-bar-rectangle')).toHaveCount(s.compressionRatios.buckets.filter((b) => b.count > 0).length);
  }
  await page.getByRole('navigation', { name: 'Date range' }).getByRole('link', { name: '30 days' }).click();
  await expect(page).toHaveURL('/');
  await screenshot(page, 'overview-data');
});

test('sessions near their budget link to their page', async ({ page }) => {
  await enterKey(page);
  await page.goto('/');
  const row = page.getByTestId('near-budget-row').filter({ hasText: nearId });
  await expect(row).toHaveCount(1);
  await expect(row.getByRole('link', { name: nearId })).toHaveAttribute('href', `/sessions/${nearId}`);
  await expect(row).toContainText('gpt-4o');
  await expect(row).toContainText(/(89|90|91)%/);
});

test('the Overview fits a 390 px wide phone, with its charts', async ({ page }) => {
  await enterKey(page);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto('/?range=90');
  await expect(page.getByTestId('chart-compactions').locator('.recharts-bar-rectangle').first()).toBeVisible();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  expect(overflow, 'horizontal overflow in px').toBe(0);
  for (const id of ['chart-compactions', 'chart-tokens-saved', 'chart-ratio']) {
    const box = await page.getByTestId(id).boundingBox();
    expect(box!.width, `${id} width`).toBeLessThanOrEqual(390);
    const svg = await page.getByTestId(id).locator('.recharts-wrapper').first().boundingBox();
    expect(svg!.width, `${id} chart width`).toBeGreaterThan(250);
  }
  await screenshot(page, 'overview-data-mobile');
  await page.goto('/');
  await screenshot(page, 'overview-data-mobile-30');
});

test('every control of the Overview is reachable by Tab, with a visible focus', async ({ page }) => {
  await enterKey(page);
  await page.goto('/');
  await expect(page.getByTestId('chart-compactions').locator('.recharts-bar-rectangle').first()).toBeVisible();
  await expect(page.getByTestId('near-budget-row').first()).toBeVisible();
  const { total, reached, invisible } = await tabThroughControls(page);
  expect(total).toBeGreaterThan(10);
  expect(reached.size, 'controls reached by Tab').toBe(total);
  expect(invisible, 'controls without a visible focus').toEqual([]);
});
