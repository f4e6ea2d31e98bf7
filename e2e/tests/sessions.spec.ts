import { expect, test, type Page } from '@playwright/test';
import { resolve } from 'node:path';
import { api, seedCompactedSession, seedSmallSession, uniqueId, useApiKey, type SessionView } from '../session-seed';
import { DASHBOARD_NO_API_URL } from '../stack';
import { failOnConsoleErrors } from '../console-errors';

const screenshotDir = resolve(__dirname, '../../test-results/screenshots');
const screenshot = (page: Page, name: string) => page.screenshot({ path: resolve(screenshotDir, `${name}.png`), fullPage: true });
const horizontalOverflow = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

/** Rows per page of the Sessions table (SESSIONS_PAGE_SIZE). */
const PAGE_SIZE = 25;

// Every test fails on a console error or an uncaught exception in the page.
failOnConsoleErrors(test);

const rows = (page: Page) => page.getByTestId('session-row');
const rowIds = (page: Page) => rows(page).evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-session-id') ?? ''));

test('search and keyset pagination: 31 sessions of one prefix, 25 on the first page, 6 on the second, back again', async ({ page, context }) => {
  test.setTimeout(90_000);
  const prefix = uniqueId('e2e-list');
  const ids = Array.from({ length: 30 }, (_, i) => `${prefix}-${String(i).padStart(2, '0')}`);
  for (const id of ids) await seedSmallSession(id);
  // One with real compactions, appended last: the most recently active, so the first row.
  const compacted = `${prefix}-compacted`;
  await seedCompactedSession(compacted, 1);
  await useApiKey(context);

  await page.goto('/sessions');
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Sessions');
  await page.getByLabel('Session id contains').fill(prefix);
  await page.getByRole('button', { name: 'Search' }).click();
  await expect(page).toHaveURL(new RegExp(`/sessions\\?q=${prefix}`));
  await expect(rows(page)).toHaveCount(PAGE_SIZE);
  const first = await rowIds(page);
  expect(first[0]).toBe(compacted);
  expect(first.every((id) => id.startsWith(prefix))).toBe(true);
  await expect(page.getByText('Page 1 · 25 sessions on this page')).toBeVisible();

  // The compacted session's row shows what the API says about it.
  const session = await api<SessionView>(`/v1/sessions/${compacted}`);
  expect(session.compactions).toBe(1);
  const row = rows(page).first();
  const bar = row.getByTestId('usage-bar');
  await expect(bar).toHaveAttribute('data-context-tokens', String(session.usage.contextTokens));
  await expect(bar).toHaveAttribute('data-budget', String(session.usage.budget));
  await expect(bar).toHaveAttribute('data-threshold', String(session.usage.threshold));
  await expect(bar.getByRole('img')).toHaveAttribute('aria-label', new RegExp(`compaction triggers at ${session.usage.threshold.toLocaleString('en-US')}`));
  await expect(row.getByTestId('compactions')).toHaveText('1');
  const badge = row.getByTestId('reliability-badge');
  await expect(badge).toContainText(`${session.reliability.emoji} ${session.reliability.label} · ${Math.round(session.reliability.score)}`);
  await expect(badge).toHaveAttribute('data-level', session.reliability.level);
  await expect(row.getByRole('link', { name: compacted })).toHaveAttribute('href', `/sessions/${compacted}`);
  await expect(row.locator('time')).toHaveText(/just now|minute/);
  await screenshot(page, 'sessions-search');

  await page.getByRole('link', { name: 'Next →' }).click();
  await expect(page).toHaveURL(/cursor=/);
  await expect(rows(page)).toHaveCount(31 - PAGE_SIZE);
  const second = await rowIds(page);
  expect(second.every((id) => id.startsWith(prefix))).toBe(true);
  expect(new Set([...first, ...second]).size).toBe(31);
  await expect(page.getByText('Page 2 · 6 sessions on this page')).toBeVisible();
  await expect(page.getByRole('link', { name: 'Next →' })).toHaveCount(0);
  await expect(page.getByLabel('Session id contains')).toHaveValue(prefix);

  await page.getByRole('link', { name: '← Previous' }).click();
  await expect(rows(page)).toHaveCount(PAGE_SIZE);
  expect(await rowIds(page)).toEqual(first);
  await expect(page.getByRole('link', { name: '← Previous' })).toHaveCount(0);

  // Filters compose with the search: only sessions at 80% of their budget or more.
  await page.getByLabel('Context usage').selectOption('near');
  await page.getByRole('button', { name: 'Search' }).click();
  await expect(page).toHaveURL(/usage=near/);
  const near = await api<{ sessions: SessionView[] }>(`/v1/sessions?search=${prefix}&minUtilization=0.8&limit=50`);
  await expect(rows(page)).toHaveCount(near.sessions.length);
});

test('a search with no match and an empty tenant say so', async ({ page, context }) => {
  await useApiKey(context);
  await page.goto(`/sessions?q=${uniqueId('nothing-matches')}`);
  await expect(page.getByText(/No sessions match these filters \(id contains “nothing-matches-/)).toBeVisible();
  await expect(rows(page)).toHaveCount(0);
  await page.getByRole('link', { name: 'Clear' }).click();
  await expect(page).toHaveURL('/sessions');
});

test('Sessions at 1280×800 and on a 390 px phone: no horizontal scroll, every row a card', async ({ page, context }) => {
  const prefix = uniqueId('e2e-layout');
  for (const suffix of ['a', 'b', 'c']) await seedSmallSession(`${prefix}-${suffix}`);
  await useApiKey(context);

  await page.goto('/sessions');
  await expect(rows(page).first()).toBeVisible();
  expect(await horizontalOverflow(page)).toBe(0);
  await screenshot(page, 'sessions-list');

  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`/sessions?q=${prefix}`);
  await expect(rows(page)).toHaveCount(3);
  expect(await horizontalOverflow(page), 'horizontal overflow in px').toBe(0);
  // Cards: each cell is labelled by its column, the usage bar spans the card.
  const card = rows(page).first();
  // The streamed rows can be in the DOM before React swaps them in for the loading state: wait until they show.
  await expect(card).toBeVisible();
  const box = await card.boundingBox();
  expect(box?.width).toBeLessThanOrEqual(390);
  await expect(card.getByTestId('usage-bar')).toBeInViewport();
  await screenshot(page, 'sessions-list-mobile');
});

test('every control is reachable by keyboard, with a visible focus ring', async ({ page, context }) => {
  const id = uniqueId('e2e-keys');
  await seedSmallSession(id);
  await useApiKey(context);
  await page.goto(`/sessions?q=${id}`);
  await expect(rows(page)).toHaveCount(1);

  await page.getByLabel('Session id contains').focus();
  const reached: string[] = [];
  for (let i = 0; i < 8; i++) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement | null;
      if (!el) return null;
      const style = getComputedStyle(el);
      return { name: el.id || el.getAttribute('aria-label') || el.textContent?.trim() || el.tagName, outline: style.outlineStyle !== 'none' && style.outlineWidth !== '0px' };
    });
    if (!focused) break;
    expect(focused.outline, `visible focus on ${focused.name}`).toBe(true);
    reached.push(focused.name);
    if (focused.name === id) break;
  }
  expect(reached).toEqual(['sessions-model', 'sessions-usage', 'Search', 'Clear', id]);
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(`/sessions/${id}`);
  await expect(page.getByRole('heading', { level: 1 })).toContainText(id);
});

test('without a key the page points to Settings; a rejected key says so', async ({ page, context }) => {
  await page.goto('/sessions');
  const notice = page.getByTestId('no-key-notice');
  await expect(notice).toContainText('Enter an API key to see sessions');
  await expect(notice.getByRole('link', { name: 'Settings' })).toHaveAttribute('href', '/settings');
  await screenshot(page, 'sessions-no-key');

  await useApiKey(context, 'cmp_not_a_real_key_0000000000000000');
  await page.goto('/sessions');
  const failure = page.getByTestId('api-failure');
  await expect(failure).toHaveAttribute('data-kind', 'rejected');
  await expect(failure).toContainText('The API rejected the key');
  await expect(failure.getByRole('link', { name: 'Settings' })).toBeVisible();
  await screenshot(page, 'sessions-key-rejected');
});

test('with the API down the page says so instead of showing an empty list', async ({ page, context }) => {
  await useApiKey(context, undefined, DASHBOARD_NO_API_URL);
  await page.goto(`${DASHBOARD_NO_API_URL}/sessions`);
  await expect(page.getByTestId('api-failure')).toHaveAttribute('data-kind', 'unreachable');
  await expect(page.getByTestId('api-failure')).toContainText('The API did not answer');
  await expect(rows(page)).toHaveCount(0);
  await screenshot(page, 'sessions-api-down');
});
