import { expect, test, type Page } from '@playwright/test';
import { resolve } from 'node:path';
import { DASHBOARD_NO_API_URL, DEAD_API_URL } from '../stack';
import { failOnConsoleErrors } from '../console-errors';

const screenshotDir = resolve(__dirname, '../../test-results/screenshots');
const screenshot = (page: Page, name: string) => page.screenshot({ path: resolve(screenshotDir, `${name}.png`), fullPage: true });

// Next adds its own (empty) role="alert" route announcer; the dashboard's API notices name the API.
const apiNotice = (page: Page) => page.getByRole('alert').filter({ hasText: /\bAPI\b/ });

const PAGES = [
  { name: 'Overview', path: '/' },
  { name: 'Sessions', path: '/sessions' },
  { name: 'Settings', path: '/settings' },
] as const;

// Every test fails on a console error or an uncaught exception in the page.
failOnConsoleErrors(test);

async function expectCurrent(page: Page, current: (typeof PAGES)[number]['name']) {
  const nav = page.getByRole('navigation', { name: 'Main' });
  for (const { name } of PAGES) {
    const link = nav.getByRole('link', { name, exact: true });
    if (name === current) await expect(link).toHaveAttribute('aria-current', 'page');
    else await expect(link).not.toHaveAttribute('aria-current');
  }
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(current);
}

test('Overview shows the header, the nav and PostgreSQL and Redis as up', async ({ page }) => {
  await page.goto('/');

  await expect(page.getByRole('banner')).toContainText('Compactor');
  const nav = page.getByRole('navigation', { name: 'Main' });
  await expect(nav.getByRole('link')).toHaveText(PAGES.map((p) => p.name));
  for (const { name, path } of PAGES) await expect(nav.getByRole('link', { name })).toHaveAttribute('href', path);
  await expectCurrent(page, 'Overview');
  await expect(page.getByRole('banner')).toContainText('API ready');

  const readiness = page.getByRole('region', { name: 'API readiness' });
  for (const service of ['PostgreSQL', 'Redis']) {
    const row = readiness.getByRole('row', { name: new RegExp(service) });
    await expect(row.getByRole('cell').nth(0)).toHaveText('Up');
    await expect(row.getByRole('cell').nth(1)).toHaveText(/^\d+ ms$/);
  }
  await expect(apiNotice(page)).toHaveCount(0);

  await screenshot(page, 'overview');
});

test('nav links lead to Sessions and Settings', async ({ page }) => {
  await page.goto('/');
  const nav = page.getByRole('navigation', { name: 'Main' });

  await nav.getByRole('link', { name: 'Sessions' }).click();
  await expect(page).toHaveURL('/sessions');
  await expectCurrent(page, 'Sessions');
  // No key in this browser yet: the Sessions page points to Settings (sessions.spec.ts covers the list).
  await expect(page.getByTestId('no-key-notice').getByRole('link', { name: 'Settings' })).toBeVisible();
  await expect(page).toHaveTitle('Sessions · Compactor');
  await screenshot(page, 'sessions');

  await nav.getByRole('link', { name: 'Settings' }).click();
  await expect(page).toHaveURL('/settings');
  await expectCurrent(page, 'Settings');
  await expect(page.getByRole('region', { name: 'Connection' })).toContainText('http://127.0.0.1:3100');
  await screenshot(page, 'settings');

  await nav.getByRole('link', { name: 'Overview' }).click();
  await expect(page).toHaveURL('/');
  await expectCurrent(page, 'Overview');
});

test('the nav is reachable by keyboard', async ({ page }) => {
  await page.goto('/');

  await page.keyboard.press('Tab');
  await expect(page.getByRole('link', { name: 'Skip to content' })).toBeFocused();

  const sessions = page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Sessions' });
  for (let presses = 0; presses < 3 && !(await sessions.evaluate((el) => el === document.activeElement)); presses++) {
    await page.keyboard.press('Tab');
  }
  await expect(sessions).toBeFocused();
  await page.keyboard.press('Enter');

  await expect(page).toHaveURL('/sessions');
  await expectCurrent(page, 'Sessions');
});

test('Overview fits a 390 px wide phone', async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto('/');

  for (const { name } of PAGES) {
    await expect(page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name })).toBeInViewport();
  }
  await expect(page.getByRole('region', { name: 'API readiness' })).toBeVisible();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  expect(overflow, 'horizontal overflow in px').toBe(0);

  await screenshot(page, 'overview-mobile');
});

test('every page says so when the API is unreachable', async ({ page }) => {
  for (const { name, path } of PAGES) {
    const response = await page.goto(`${DASHBOARD_NO_API_URL}${path}`);
    expect(response?.status(), `${path} status`).toBe(200);
    await expect(page.getByRole('heading', { level: 1 })).toHaveText(name);
    await expect(apiNotice(page)).toContainText(`API unreachable at ${DEAD_API_URL}`);
    await expect(page.getByRole('banner')).toContainText('API unreachable');
  }

  await page.goto(DASHBOARD_NO_API_URL);
  await expect(page.getByRole('region', { name: 'API readiness' })).toContainText('Unknown');
  await screenshot(page, 'overview-api-down');
});
