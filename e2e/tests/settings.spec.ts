import { expect, test, type APIRequestContext, type Page } from '@playwright/test';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { API_URL, DASHBOARD_URL, E2E_API_KEY } from '../stack';
import { failOnConsoleErrors } from '../console-errors';
import { tabThroughControls } from '../keyboard';

/**
 * Settings against the real stack: the key entered once through the form (kept in an httpOnly
 * cookie, never in a page, a response the browser sees, or a URL), the tenant's keys created and
 * revoked, the workers' summarizer (the e2e worker runs `local`), and the presets.
 */

const screenshotDir = resolve(__dirname, '../../test-results/screenshots');
const screenshot = (page: Page, name: string) => page.screenshot({ path: resolve(screenshotDir, `${name}.png`), fullPage: true });
const uid = (label: string) => `${label}-${randomBytes(4).toString('hex')}`;

// Every test fails on a console error or an uncaught exception in the page.
failOnConsoleErrors(test);

let api: APIRequestContext;
test.beforeAll(async ({ playwright }) => {
  api = await playwright.request.newContext({ baseURL: API_URL });
});
test.afterAll(async () => {
  await api?.dispose();
});

const keyForm = (page: Page) => page.getByRole('form', { name: 'Enter the API key' });

async function enterKey(page: Page, key = E2E_API_KEY) {
  await page.goto('/settings');
  await keyForm(page).getByLabel('API key', { exact: true }).fill(key);
  await keyForm(page).getByRole('button', { name: 'Save key' }).click();
}

test('the key is entered once through the form and stays in an httpOnly cookie the page never shows', async ({ page, context }) => {
  // Everything the browser sends or receives from the dashboard, to look for the key in it.
  const urls: string[] = [];
  const bodies: Promise<string>[] = [];
  page.on('request', (request) => urls.push(request.url()));
  page.on('response', (response) => {
    if (response.url().startsWith(DASHBOARD_URL) && response.request().method() !== 'OPTIONS') bodies.push(response.text().catch(() => ''));
  });

  await page.goto('/settings');
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Settings');
  const apiKeySection = page.getByRole('region', { name: 'API key', exact: true });
  await expect(apiKeySection.getByLabel('API key', { exact: true })).toHaveAttribute('type', 'password');
  await expect(page.getByRole('region', { name: 'Provider status' }).getByTestId('key-notice')).toHaveAttribute('data-state', 'no-key');
  await screenshot(page, 'settings-no-key');

  await enterKey(page);
  await expect(apiKeySection.getByTestId('key-saved')).toHaveText('A key is saved and the API accepts it.');
  await expect(apiKeySection.getByTestId('key-scopes')).toContainText('admin');
  // The key's name and its prefix (the first characters the API keeps to tell keys apart), never the key.
  await expect(apiKeySection).toContainText(/Key\s*init\s*e2e_/);

  const cookies = await context.cookies();
  const cookie = cookies.find((c) => c.name === 'compactor_api_key');
  expect(cookie, 'the key cookie').toBeDefined();
  expect(cookie).toMatchObject({ value: E2E_API_KEY, httpOnly: true, sameSite: 'Strict', path: '/' });
  expect(await page.evaluate(() => document.cookie)).not.toContain(E2E_API_KEY);

  await page.goto('/');
  await expect(page.getByTestId('stat-tokens-saved')).toBeVisible();
  await page.goto('/settings');
  await expect(apiKeySection.getByTestId('key-saved')).toBeVisible();

  expect(await page.content()).not.toContain(E2E_API_KEY);
  const seen = await Promise.all(bodies);
  expect(seen.length).toBeGreaterThan(3);
  expect(seen.filter((b) => b.includes(E2E_API_KEY)), 'dashboard responses containing the key').toEqual([]);
  expect(urls.filter((u) => u.includes(E2E_API_KEY) || u.includes(encodeURIComponent(E2E_API_KEY))), 'URLs containing the key').toEqual([]);
  expect(urls.filter((u) => u.startsWith(API_URL)), 'the browser never calls the API itself').toEqual([]);
});

test('a wrong key is refused and nothing is stored; Remove key forgets a saved one', async ({ page, context }) => {
  await enterKey(page, 'ck_this_key_does_not_exist_0000');
  await expect(keyForm(page).getByRole('alert')).toContainText('The API rejected this key');
  await expect(keyForm(page).getByLabel('API key', { exact: true })).toHaveAttribute('aria-invalid', 'true');
  expect((await context.cookies()).find((c) => c.name === 'compactor_api_key')).toBeUndefined();
  await screenshot(page, 'settings-wrong-key');

  await keyForm(page).getByLabel('API key', { exact: true }).fill('');
  await keyForm(page).getByRole('button', { name: 'Save key' }).click();
  await expect(keyForm(page).getByRole('alert')).toHaveText('Enter an API key.');

  await enterKey(page);
  await expect(page.getByTestId('key-saved')).toBeVisible();
  await page.getByRole('region', { name: 'API key', exact: true }).getByRole('button', { name: 'Remove key' }).click();
  await expect(keyForm(page)).toBeVisible();
  await expect.poll(async () => (await context.cookies()).some((c) => c.name === 'compactor_api_key')).toBe(false);
  await page.goto('/');
  await expect(page.getByTestId('key-notice')).toHaveAttribute('data-state', 'no-key');
});

test('provider status shows the local summarizer of the running worker, the queue, and the presets', async ({ page }) => {
  await enterKey(page);
  const provider = page.getByRole('region', { name: 'Provider status' });
  await expect(provider.getByTestId('provider-name')).toHaveText('local');
  await expect(provider.getByTestId('provider-summary')).toContainText('Healthy');
  const worker = provider.getByTestId('worker-row').first();
  await expect(worker.getByTestId('worker-provider')).toHaveText('local');
  await expect(worker).toContainText('Offline summarizer');
  await expect(provider.getByRole('definition').first()).toHaveText(/^\d+$/);

  const status = await (await api.get('/v1/status', { headers: { Authorization: `Bearer ${E2E_API_KEY}` } })).json();
  await expect(provider.getByTestId('worker-row')).toHaveCount(status.workers.length);

  const presets = page.getByRole('region', { name: 'Policy presets' });
  await expect(presets.getByTestId('preset-row')).toHaveCount(6);
  await expect(presets.getByTestId('preset-row').filter({ hasText: 'balanced' })).toContainText('default');
  await expect(presets.getByTestId('preset-row').filter({ hasText: 'factor3' })).toContainText('50% of the budget');
  await expect(presets.getByTestId('preset-row').filter({ hasText: 'checkpoint-aging' })).toContainText('80% of the available budget');
});

test('a key is created with its secret shown once, and revoked after a confirmation', async ({ page, context }) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: DASHBOARD_URL });
  await enterKey(page);
  const keys = page.getByRole('region', { name: 'API keys' });
  const name = uid('e2e-created');

  const create = keys.getByRole('form', { name: 'Create an API key' });
  await create.getByLabel('Name').fill(name);
  await create.getByRole('checkbox', { name: /^ingest/ }).uncheck();
  await create.getByRole('checkbox', { name: /^read/ }).check();
  await create.getByRole('button', { name: 'Create key' }).click();

  const secret = keys.getByTestId('new-key-secret');
  await expect(secret).toBeVisible();
  await expect(secret).toBeFocused();
  const key = (await secret.textContent())!.trim();
  expect(key.length).toBeGreaterThan(20);
  await keys.getByRole('button', { name: `Copy the key “${name}”` }).click();
  await expect(keys.getByRole('button', { name: `Copy the key “${name}”` })).toHaveText('Copied');
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);

  const row = keys.getByRole('table', { name: 'Active API keys' }).getByTestId('key-row').filter({ hasText: name });
  await expect(row).toContainText('Active');
  await expect(row).toContainText('read');
  await expect(row).not.toContainText('ingest');
  // The list shows the key's prefix only.
  const prefix = (await row.locator('code').first().textContent())!.replace(/…$/, '');
  expect(prefix.length).toBeGreaterThan(3);
  expect(key.startsWith(prefix)).toBe(true);
  expect((await api.get('/v1/status/caller', { headers: { Authorization: `Bearer ${key}` } })).status(), 'the new key works').toBe(200);
  await screenshot(page, 'settings-key-created');

  // Revoke: Cancel changes nothing; confirming revokes.
  await row.getByRole('button', { name: `Revoke ${name}` }).click();
  const dialog = page.getByRole('dialog', { name: `Revoke “${name}”?` });
  await expect(dialog).toBeVisible();
  await expect(dialog.getByRole('button', { name: 'Cancel' })).toBeFocused();
  await screenshot(page, 'settings-revoke-dialog');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await expect(dialog).toBeHidden();
  await expect(row).toContainText('Active');
  expect((await api.get('/v1/status/caller', { headers: { Authorization: `Bearer ${key}` } })).status()).toBe(200);

  await row.getByRole('button', { name: `Revoke ${name}` }).click();
  await dialog.getByRole('button', { name: 'Revoke key' }).click();
  await expect(dialog).toBeHidden();
  // Revoked keys move to their own list, folded away.
  await expect(keys.getByRole('table', { name: 'Active API keys' }).getByTestId('key-row').filter({ hasText: name })).toHaveCount(0);
  const revoked = keys.getByTestId('revoked-keys');
  await revoked.locator('summary').click();
  await expect(revoked.getByTestId('key-row').filter({ hasText: name })).toContainText('Revoked');
  await expect(row.getByRole('button', { name: `Revoke ${name}` })).toHaveCount(0);
  expect((await api.get('/v1/status/caller', { headers: { Authorization: `Bearer ${key}` } })).status(), 'the revoked key is refused').toBe(401);

  // Shown once: after a reload the secret is gone.
  await page.reload();
  await keys.getByTestId('revoked-keys').locator('summary').click();
  await expect(keys.getByTestId('revoked-keys').getByTestId('key-row').filter({ hasText: name })).toContainText('Revoked');
  expect(await page.content()).not.toContain(key);
});

test('Settings fits 1280 and 390 px wide, and every control is reachable by Tab with a visible focus', async ({ page }) => {
  await enterKey(page);
  await expect(page.getByTestId('key-saved')).toBeVisible();
  await screenshot(page, 'settings-with-key');

  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto('/settings');
  await expect(page.getByTestId('worker-row').first()).toBeVisible();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  expect(overflow, 'horizontal overflow in px').toBe(0);
  await screenshot(page, 'settings-with-key-mobile');

  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('/settings');
  await expect(page.getByTestId('key-row').first()).toBeVisible();
  const { total, reached, invisible } = await tabThroughControls(page);
  expect(total).toBeGreaterThan(8);
  expect(reached.size, 'controls reached by Tab').toBe(total);
  expect(invisible, 'controls without a visible focus').toEqual([]);
});

test('the Tenant section saves the proxy upstreams, timeout and default policy, shows a refused field next to it, and the audit log shows the change', async ({ page }) => {
  const headers = { Authorization: `Bearer ${E2E_API_KEY}`, 'content-type': 'application/json' };
  const before = await (await api.get('/v1/tenant', { headers })).json();
  // A unique timeout, so the audit line is this test's own.
  const timeoutMs = 20_000 + Math.floor(Math.random() * 100_000);
  try {
    await enterKey(page);
    const tenant = page.getByRole('region', { name: 'Tenant', exact: true });
    const form = tenant.getByRole('form', { name: 'Tenant settings' });
    await expect(form).toBeVisible();

    // An upstream on loopback: the API refuses it, naming the field, and the form shows it next to that field.
    await form.getByLabel('OpenAI upstream').fill('http://127.0.0.1:9');
    await form.getByRole('button', { name: 'Save tenant settings' }).click();
    const openaiField = form.locator('[data-field="proxy.openaiBaseUrl"]');
    await expect(openaiField.getByTestId('error-proxy.openaiBaseUrl')).toContainText('internal address');
    await expect(form.getByLabel('OpenAI upstream')).toHaveAttribute('aria-invalid', 'true');
    await expect(form.getByRole('alert')).toHaveText('Check the fields marked below.');
    expect((await (await api.get('/v1/tenant', { headers })).json()).proxy.openaiBaseUrl).toBe(before.proxy.openaiBaseUrl);

    await form.getByLabel('OpenAI upstream').fill('https://203.0.113.10');
    await form.getByLabel('Upstream timeout (ms)').fill(String(timeoutMs));
    await form.getByLabel('Default policy').selectOption('factor3');
    await form.getByRole('button', { name: 'Save tenant settings' }).click();
    await expect(form.getByRole('status')).toHaveText('Tenant settings saved.');
    await expect(form.locator('[data-field="proxy.openaiBaseUrl"]').getByTestId('error-proxy.openaiBaseUrl')).toHaveCount(0);

    const saved = await (await api.get('/v1/tenant', { headers })).json();
    expect(saved.proxy).toMatchObject({ openaiBaseUrl: 'https://203.0.113.10', timeoutMs });
    expect(saved.defaultPolicy).toEqual({ preset: 'factor3', overrides: {} });

    // The page shows the saved values, and the audit log the change, newest first.
    await page.reload();
    await expect(form.getByLabel('OpenAI upstream')).toHaveValue('https://203.0.113.10');
    await expect(form.getByLabel('Default policy')).toHaveValue('factor3');
    const latest = page.getByRole('region', { name: 'Audit log' }).getByTestId('audit-entry').first();
    await expect(latest).toHaveAttribute('data-action', 'tenant.updated');
    await expect(latest).toContainText('Tenant settings changed');
    await expect(latest).toContainText(`proxy.timeoutMs: ${before.proxy.timeoutMs ?? 'default'} → ${timeoutMs}`);
    await expect(latest).toContainText('defaultPolicy');
    await latest.scrollIntoViewIfNeeded();
    await screenshot(page, 'settings-tenant-and-audit');
  } finally {
    // Other tests create sessions without a policy on this tenant: put its settings back.
    const restore = { proxy: before.proxy, defaultPolicy: before.defaultPolicy ?? null };
    expect((await api.patch('/v1/tenant', { headers, data: restore })).status()).toBe(200);
  }
});

test("the Limits section shows each limit in force, labelled as the tenant's own or the default, saves a change, and shows a refused value next to its field", async ({ page }) => {
  const headers = { Authorization: `Bearer ${E2E_API_KEY}`, 'content-type': 'application/json' };
  const before = await (await api.get('/v1/tenant', { headers })).json();
  // A unique per-key limit (high: other tests use this key), so the audit line and the header are this test's own.
  const perKey = 50_000 + Math.floor(Math.random() * 10_000);
  try {
    await enterKey(page);
    const form = page.getByRole('region', { name: 'Limits', exact: true }).getByRole('form', { name: 'Tenant limits' });
    const row = (name: string) => form.locator(`[data-field="limits.${name}"]`);
    await expect(form.getByTestId('limit-row')).toHaveCount(6);
    // The e2e stack sets no COMPACTOR_LIMIT_*: where the tenant set nothing, the operator's default applies, no limit.
    await expect(row('requestsPerMinute').getByTestId('limit-in-force')).toHaveAttribute('data-source', 'default');
    await expect(row('requestsPerMinute').getByTestId('limit-in-force')).toContainText('No limit operator default');
    await expect(row('summarizerTokensPerDay').getByTestId('limit-in-force')).toContainText('Used today:');

    // Out of the API's range: refused, named next to the field, nothing saved.
    await form.getByLabel('Appended tokens per minute').fill('10');
    await form.getByRole('button', { name: 'Save limits' }).click();
    await expect(row('appendedTokensPerMinute').getByTestId('error-limits.appendedTokensPerMinute')).toContainText('must be 0 (no limit) or 1000..1000000000');
    await expect(form.getByLabel('Appended tokens per minute')).toHaveAttribute('aria-invalid', 'true');
    await expect(form.getByRole('alert')).toHaveText('Check the fields marked below.');
    expect((await (await api.get('/v1/tenant', { headers })).json()).limits).toEqual(before.limits);

    await form.getByLabel('Appended tokens per minute').fill(before.limits.appendedTokensPerMinute === null ? '' : String(before.limits.appendedTokensPerMinute));
    await form.getByLabel('Requests per minute, each key').fill(perKey.toLocaleString('en-US'));
    await form.getByLabel('Summarizer cost per day (USD)').fill('2.5');
    await form.getByRole('button', { name: 'Save limits' }).click();
    await expect(form.getByRole('status')).toHaveText('Limits saved (2 changed).');
    const saved = await (await api.get('/v1/tenant', { headers })).json();
    expect(saved.limits).toMatchObject({ requestsPerMinutePerKey: perKey, summarizerCostPerDayUsd: 2.5 });
    // The API enforces it at once: every answer to this key carries the limit.
    expect((await api.get('/v1/sessions', { headers })).headers()['x-ratelimit-limit']).toBe(String(perKey));

    await page.reload();
    await expect(row('requestsPerMinutePerKey').getByTestId('limit-in-force')).toHaveAttribute('data-source', 'tenant');
    await expect(row('requestsPerMinutePerKey').getByTestId('limit-in-force')).toContainText(`${perKey.toLocaleString('en-US')} requests per minute tenant's own`);
    await expect(row('summarizerCostPerDayUsd').getByTestId('limit-in-force')).toContainText("$2.50 per UTC day tenant's own");
    await expect(form.getByLabel('Requests per minute, each key')).toHaveValue(String(perKey));
    const latest = page.getByRole('region', { name: 'Audit log' }).getByTestId('audit-entry').first();
    await expect(latest).toContainText(`limits.requestsPerMinutePerKey: ${before.limits.requestsPerMinutePerKey ?? 'default'} → ${perKey}`);
    await form.scrollIntoViewIfNeeded();
    await screenshot(page, 'settings-limits');

    // Emptied: back to the operator's default.
    await form.getByLabel('Requests per minute, each key').fill('');
    await form.getByRole('button', { name: 'Save limits' }).click();
    await expect(form.getByRole('status')).toHaveText('Limits saved (1 changed).');
    await expect(row('requestsPerMinutePerKey').getByTestId('limit-in-force')).toHaveAttribute('data-source', 'default');
    expect((await api.get('/v1/sessions', { headers })).headers()['x-ratelimit-limit']).toBeUndefined();
  } finally {
    expect((await api.patch('/v1/tenant', { headers, data: { limits: before.limits } })).status()).toBe(200);
  }
});

test('a key without the admin scope is told why it sees no tenant settings or audit log', async ({ page }) => {
  const headers = { Authorization: `Bearer ${E2E_API_KEY}`, 'content-type': 'application/json' };
  const created = await (await api.post('/v1/keys', { headers, data: { name: uid('e2e-read'), scopes: ['read'] } })).json();
  try {
    await enterKey(page, created.key);
    await expect(page.getByRole('region', { name: 'Tenant', exact: true }).getByTestId('admin-only')).toContainText('needs the admin scope; the saved key has read');
    await expect(page.getByRole('region', { name: 'Audit log' }).getByTestId('admin-only')).toContainText('needs the admin scope');
    await expect(page.getByRole('region', { name: 'Limits', exact: true }).getByTestId('admin-only')).toContainText("the tenant's limits needs the admin scope");
    await expect(page.getByRole('form', { name: 'Tenant settings' })).toHaveCount(0);
  } finally {
    await api.delete(`/v1/keys/${created.id}`, { headers });
  }
});

test('a key is created with an expiry, shown in its row; once past it the key is listed as expired and refused', async ({ page }) => {
  await enterKey(page);
  const keys = page.getByRole('region', { name: 'API keys' });
  const name = uid('e2e-expiring');
  const create = keys.getByRole('form', { name: 'Create an API key' });
  await create.getByLabel('Name').fill(name);
  await create.getByLabel('Expires after (days)').fill('30');
  await create.getByRole('button', { name: 'Create key' }).click();
  await expect(keys.getByTestId('new-key-secret')).toBeVisible();
  await expect(keys.getByText('It expires', { exact: false })).toBeVisible();
  const row = keys.getByRole('table', { name: 'Active API keys' }).getByTestId('key-row').filter({ hasText: name });
  await expect(row).toContainText('Active, expires');
  await screenshot(page, 'settings-key-expiring');

  // A key that expires 2 s after its creation (over the API): refused once past it, then folded away as expired.
  const short = uid('e2e-expired');
  const created = await api.post('/v1/keys', {
    headers: { Authorization: `Bearer ${E2E_API_KEY}` },
    data: { name: short, scopes: ['read'], expiresAt: new Date(Date.now() + 2_000).toISOString() },
  });
  expect(created.status()).toBe(201);
  const { key } = (await created.json()) as { key: string };
  await expect
    .poll(async () => (await api.get('/v1/status/caller', { headers: { Authorization: `Bearer ${key}` } })).status(), { timeout: 10_000 })
    .toBe(401);
  await page.reload();
  await expect(keys.getByRole('table', { name: 'Active API keys' }).getByTestId('key-row').filter({ hasText: short })).toHaveCount(0);
  const folded = keys.getByTestId('revoked-keys');
  await folded.locator('summary').click();
  await expect(folded.getByTestId('key-row').filter({ hasText: short })).toContainText('Expired');
});
