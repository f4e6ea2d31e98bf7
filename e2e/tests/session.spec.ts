import { expect, test, type Page } from '@playwright/test';
import { resolve } from 'node:path';
import { Client } from 'pg';
import {
  api,
  finished,
  seedCompactedSession,
  seedQuietSession,
  uniqueId,
  useApiKey,
  type ContextView,
  type SessionView,
  type UsageSeries,
} from '../session-seed';
import { API_URL, DASHBOARD_URL, E2E_API_KEY } from '../stack';
import { expectNotFoundPage, failOnConsoleErrors } from '../console-errors';

const screenshotDir = resolve(__dirname, '../../test-results/screenshots');
const screenshot = (page: Page, name: string) => page.screenshot({ path: resolve(screenshotDir, `${name}.png`), fullPage: true });
const horizontalOverflow = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

// Every test fails on a console error or an uncaught exception in the page.
failOnConsoleErrors(test);

interface Snapshot {
  id: string;
  kind: string;
  label: string | null;
  version: number;
  compactionJobId: string | null;
}
interface Checkpoint {
  id: string;
  inContext: boolean;
}
interface Diff {
  messages: { masked: { seq: number }[]; offloaded: { seq: number; artifactIds: string[] }[]; summarized: { seq: number; checkpointId: string }[] };
}

const chart = (page: Page) => page.getByTestId('usage-chart');
const formatTokens = (n: number) => n.toLocaleString('en-US');
const count = (series: UsageSeries, kind: string) => series.points.filter((p) => p.kind === kind).length;

test('a compacted session: usage chart, reliability, checkpoints, goal, and the context beside the history', async ({ page, context }) => {
  test.setTimeout(90_000);
  const id = uniqueId('e2e-session');
  const { jobs } = await seedCompactedSession(id, 2, { untilOffloaded: true });
  const n = jobs.length;
  await api(`/v1/sessions/${id}/goal`, {
    method: 'PUT',
    body: {
      goal: 'Fix the TimeDelta rounding bug',
      priority: 'high',
      checkpoints: [
        { text: 'Reproduce the bug', status: 'completed' },
        { text: 'Patch fields.py', status: 'in-progress' },
        { text: 'Run the test suite', status: 'pending' },
      ],
      decisions: [{ text: 'Use round(), not int()', locked: true }],
      constraints: ['Touch only src/marshmallow/fields.py'],
      nextStep: 'Run reproduce.py again',
    },
  });
  const [session, usage, ctx, checkpoints] = await Promise.all([
    api<SessionView>(`/v1/sessions/${id}`),
    api<UsageSeries>(`/v1/sessions/${id}/usage`),
    api<ContextView>(`/v1/sessions/${id}/context?format=canonical`),
    api<{ checkpoints: Checkpoint[] }>(`/v1/sessions/${id}/checkpoints`),
  ]);
  const diff = await api<Diff>(`/v1/sessions/${id}/versions/0/diff/${ctx.contextVersion}`);
  await useApiKey(context);

  await page.goto(`/sessions/${id}`);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(`Session ${id}`);
  await expect(page).toHaveTitle(`Session ${id} · Compactor`);

  // The chart: one dot per append, one marker per compaction, as many points as the API's series.
  await expect(chart(page)).toHaveAttribute('data-points', String(usage.points.length));
  await expect(chart(page)).toHaveAttribute('data-appends', String(count(usage, 'append')));
  await expect(chart(page)).toHaveAttribute('data-compactions', String(n));
  await expect(chart(page).locator('svg [data-marker="compaction"]')).toHaveCount(n);
  await expect(chart(page).locator('svg circle[data-kind="append"]')).toHaveCount(count(usage, 'append'));
  await expect(chart(page).locator('svg [data-marker="restore"]')).toHaveCount(0);
  await expect(chart(page).getByRole('img', { name: new RegExp(`^Chart: token usage over time\\. \\d+ points \\(\\d+ appends, ${n} compactions, 0 restores`) })).toBeVisible();
  await expect(chart(page).locator('figcaption')).toContainText(`Context now ${session.usage.contextTokens.toLocaleString('en-US')} of ${session.usage.budget.toLocaleString('en-US')}`);
  // Budget and trigger lines are drawn (recharts names its line curves by series).
  await expect(chart(page).locator('.recharts-legend-item')).toHaveText(['Budget', 'Compaction', 'Context tokens', 'Trigger line'].map((t) => new RegExp(t)), { useInnerText: true });
  await page.getByText(`Compactions and restores as a table (${n})`).click();
  await expect(page.getByTestId('usage-markers').locator('tbody tr')).toHaveCount(n);

  // The one budget, as the API makes it up: window − reserve − margin = budget.
  const budget = (session as SessionView & { budget: { reserve: number; safetyMargin: number; budget: number } }).budget;
  await expect(page.getByTestId('budget-parts')).toHaveText(
    `− ${formatTokens(budget.reserve)} reserve − ${formatTokens(budget.safetyMargin)} margin = ${formatTokens(budget.budget)} budget`,
    { useInnerText: true },
  );
  expect(budget.budget).toBe(session.usage.budget);

  // Reliability: the badge, the warning, the three factors.
  const reliability = page.getByTestId('reliability');
  await expect(reliability.getByTestId('reliability-badge')).toContainText(`${session.reliability.emoji} ${session.reliability.label} · ${Math.round(session.reliability.score)}`);
  await expect(reliability.getByTestId('factor-modelFactor')).toHaveText(session.reliability.factors.modelFactor.toFixed(2));
  // Seed 004's penalty: 0.15 per compaction.
  await expect(reliability.getByTestId('factor-compressionPenalty')).toHaveText((1 - 0.15 * n).toFixed(2));
  await expect(reliability.getByTestId('factor-contextConfidence')).toHaveText(session.reliability.factors.contextConfidence.toFixed(2));
  if (session.reliability.warning) await expect(reliability.getByTestId('reliability-warning')).toContainText(session.reliability.warning.split('\n')[0]);

  // Checkpoints by level, the ones in force marked.
  const timeline = page.getByTestId('checkpoints');
  await expect(timeline.getByTestId('checkpoint')).toHaveCount(checkpoints.checkpoints.length);
  await expect(timeline.locator('[data-testid="checkpoint"][data-in-context="true"]')).toHaveCount(checkpoints.checkpoints.filter((c) => c.inContext).length);
  await expect(timeline.locator('[data-testid="checkpoint"][data-level="old"]')).not.toHaveCount(0);

  // Goal panel.
  const goal = page.getByTestId('goal');
  await expect(goal).toContainText('Fix the TimeDelta rounding bug');
  await expect(goal).toContainText('✅ Reproduce the bug');
  await expect(goal).toContainText('🔄 Patch fields.py');
  await expect(goal).toContainText('⏳ Run the test suite');
  await expect(goal).toContainText('🔒 Use round(), not int()');
  await expect(goal).toContainText('Touch only src/marshmallow/fields.py');
  await expect(goal).toContainText('Next step: Run reproduce.py again');

  // The context as sent, message for message, beside the history's latest page.
  const contextColumn = page.getByTestId('context-column');
  await expect(contextColumn).toHaveAttribute('data-context-version', String(ctx.contextVersion));
  await expect(contextColumn.getByTestId('context-message')).toHaveCount(ctx.messages.length);
  await expect(contextColumn.locator('[data-kind="checkpoint"]')).toHaveCount(checkpoints.checkpoints.filter((c) => c.inContext).length);
  await expect(contextColumn.locator('[data-protection="system"]')).toHaveCount(1);
  await expect(contextColumn.locator('[data-protection="latest"]').first()).toBeVisible();
  const total = session.messageCount;
  await expect(page.getByTestId('history-range')).toHaveText(`Messages ${total - 49}–${total} of ${total}, exactly as appended`);

  // Offloaded output: its artifact is one click away, served by the dashboard with the key kept server-side.
  const offloaded = diff.messages.offloaded[0];
  expect(offloaded, 'the seeded session offloads a large tool output').toBeDefined();
  const artifactId = offloaded.artifactIds[0];
  const artifactLink = page.getByTestId('artifact-link').filter({ hasText: artifactId }).first();
  await expect(artifactLink).toHaveAttribute('href', `/api/artifacts/${artifactId}`);
  const artifact = await page.request.get(`/api/artifacts/${artifactId}`);
  expect(artifact.status()).toBe(200);
  expect(artifact.headers()['content-type']).toBe('text/plain; charset=utf-8');
  const direct = await fetch(`${API_URL}/v1/artifacts/${artifactId}`, { headers: { Authorization: `Bearer ${E2E_API_KEY}` } });
  expect(await artifact.text()).toBe(await direct.text());
  // Without the cookie the same URL refuses.
  const anonymous = await fetch(`${DASHBOARD_URL}/api/artifacts/${artifactId}`);
  expect(anonymous.status).toBe(401);

  // Summarized messages link to their checkpoint; an older page of the history is one link away.
  await page.getByTestId('history-column').getByRole('link', { name: 'First' }).first().click();
  await expect(page.getByTestId('history-range')).toHaveText(`Messages 1–50 of ${total}, exactly as appended`);
  const summarizedRow = page.locator('[data-testid="history-message"][data-status="summarized"]').first();
  await expect(summarizedRow).toBeVisible();
  const checkpointHref = await summarizedRow.getByTestId('checkpoint-link').getAttribute('href');
  expect(checkpointHref).toMatch(/^#checkpoint-ckpt_/);
  await expect(page.locator(checkpointHref as string)).toHaveAttribute('data-in-context', 'true');
  await expect(page.locator(`[data-testid="history-message"][data-seq="${diff.messages.summarized[0].seq}"]`)).toHaveAttribute('data-status', 'summarized');
  await expect(page.locator('[data-testid="history-message"][data-seq="1"]').locator('[data-protection="system"]')).toBeVisible();
  await page.goto(`/sessions/${id}`);
  // The page streams: wait for the chart's markers, or the screenshot can catch the loading skeleton.
  await expect(chart(page).locator('svg [data-marker="compaction"]')).toHaveCount(n);
  await screenshot(page, 'session');

  // Narrow: no horizontal scroll; the context column sits above the history column.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`/sessions/${id}`);
  await expect(chart(page).locator('svg [data-marker="compaction"]')).toHaveCount(n);
  expect(await horizontalOverflow(page), 'horizontal overflow in px').toBe(0);
  const contextBox = await page.getByTestId('context-column').boundingBox();
  const historyBox = await page.getByTestId('history-column').boundingBox();
  expect(historyBox!.y).toBeGreaterThan(contextBox!.y + contextBox!.height - 1);
  await screenshot(page, 'session-mobile');
});

test('Compact now: the events list follows the compaction live, without a reload, and the chart gains its marker', async ({ page, context }) => {
  test.setTimeout(60_000);
  const id = uniqueId('e2e-live');
  await seedQuietSession(id);
  await useApiKey(context);
  await page.goto(`/sessions/${id}`);
  await expect(page.getByTestId('live-state')).toHaveText('Live');
  await expect(chart(page)).toHaveAttribute('data-compactions', '0');
  await expect(chart(page).locator('figcaption')).toContainText('No compactions yet');
  await expect(page.getByRole('button', { name: 'Undo last compaction' })).toBeDisabled();
  await expect(page.getByTestId('checkpoints')).toContainText('No checkpoints yet');
  const before = await page.locator('[data-event-id]').count();
  // A marker that a reload would wipe out.
  await page.evaluate(() => ((window as unknown as { __sameDocument: boolean }).__sameDocument = true));

  // Compact now previews first (a dry run); Apply runs the compaction.
  await page.getByRole('button', { name: 'Compact now' }).click();
  const preview = page.getByRole('dialog', { name: 'Preview compaction' });
  await expect(preview.getByTestId('compaction-preview')).toHaveAttribute('data-state', 'ready');
  await preview.getByRole('button', { name: 'Apply' }).click();
  await expect(page.getByTestId('action-status')).toContainText('Compaction queued');
  const events = page.getByTestId('events-list');
  await expect(events.locator('[data-event-type="compaction-started"]')).toHaveCount(1);
  await expect(events.locator('[data-event-type="checkpoint-created"]')).toHaveCount(1);
  await expect(events.locator('[data-event-type="compressed"]')).toHaveCount(1);
  await expect(events.locator('[data-event-type="compressed"]')).toContainText(/Compacted [\d,]+ → [\d,]+ tokens/);
  expect(await page.locator('[data-event-id]').count()).toBeGreaterThan(before + 2);
  // Newest first.
  const ids = await events.locator('[data-event-id]').evaluateAll((lis) => lis.map((li) => BigInt(li.getAttribute('data-event-id') ?? '0')));
  expect(ids).toEqual([...ids].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0)));

  // The finished compaction refreshes the server-rendered parts in place.
  await expect(chart(page)).toHaveAttribute('data-compactions', '1');
  await expect(chart(page).locator('svg [data-marker="compaction"]')).toHaveCount(1);
  await expect(page.getByTestId('checkpoints').getByTestId('checkpoint')).toHaveCount(1);
  await expect(page.getByRole('button', { name: 'Undo last compaction' })).toBeEnabled();
  expect(await page.evaluate(() => (window as unknown as { __sameDocument?: boolean }).__sameDocument)).toBe(true);
  await screenshot(page, 'session-live');
});

test('the events relay resumes after Last-Event-ID and sends every type to onmessage', async ({ context }) => {
  const id = uniqueId('e2e-relay');
  await seedCompactedSession(id, 1);
  const all = await api<{ events: { id: string; type: string }[] }>(`/v1/sessions/${id}/events?limit=100`);
  expect(all.events.length).toBeGreaterThan(3);
  const resumeAfter = all.events[1].id;
  await useApiKey(context);
  const cookie = (await context.cookies(DASHBOARD_URL)).map((c) => `${c.name}=${c.value}`).join('; ');

  const abort = new AbortController();
  const response = await fetch(`${DASHBOARD_URL}/api/sessions/${id}/events?after=0`, {
    headers: { Accept: 'text/event-stream', 'Last-Event-ID': resumeAfter, Cookie: cookie },
    signal: abort.signal,
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('text/event-stream');
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  // Read until the last stored event has arrived (the stream itself never ends).
  while (!text.includes(`id: ${all.events.at(-1)!.id}\n`)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  abort.abort();
  const frames = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => m[1]);
  expect(frames).toEqual(all.events.slice(2).map((e) => e.id));
  expect(text).not.toMatch(/^event:/m);
  expect(text).toContain('"type":"compressed"');

  // No cookie, no stream.
  expect((await fetch(`${DASHBOARD_URL}/api/sessions/${id}/events`)).status).toBe(401);
});

test('restore a snapshot through the dialog, then undo the last compaction: the head changes each time', async ({ page, context }) => {
  test.setTimeout(90_000);
  const id = uniqueId('e2e-restore');
  const { jobs } = await seedCompactedSession(id, 2);
  const head = (await api<ContextView>(`/v1/sessions/${id}/context?format=canonical`)).contextVersion!;
  const snapshots = (await api<{ snapshots: Snapshot[] }>(`/v1/sessions/${id}/snapshots`)).snapshots;
  const target = snapshots.find((s) => s.kind === 'pre-compaction' && s.version === 0)!;
  expect(target).toBeDefined();
  await useApiKey(context);
  await page.goto(`/sessions/${id}`);
  await expect(page.getByTestId('live-state')).toHaveText('Live');

  const row = page.locator(`[data-testid="snapshot"][data-snapshot-id="${target.id}"]`);
  const restoreButton = row.getByRole('button', { name: /^Restore snapshot/ });
  await restoreButton.click();
  const dialog = page.getByRole('dialog', { name: 'Restore this snapshot?' });
  await expect(dialog).toBeVisible();
  await expect(dialog.getByRole('button', { name: 'Cancel' })).toBeFocused();
  // Modal: the rest of the page is inert behind a backdrop.
  expect(await dialog.evaluate((d) => d.matches(':modal'))).toBe(true);
  // Focus stays inside the dialog, both ways round.
  await page.keyboard.press('Tab');
  await expect(dialog.getByRole('button', { name: 'Restore snapshot' })).toBeFocused();
  await page.keyboard.press('Tab');
  await expect(dialog.getByRole('button', { name: 'Cancel' })).toBeFocused();
  await page.keyboard.press('Shift+Tab');
  await expect(dialog.getByRole('button', { name: 'Restore snapshot' })).toBeFocused();
  // The modal is fixed to the viewport: a viewport screenshot shows it over the page.
  await page.screenshot({ path: resolve(screenshotDir, 'session-restore-dialog.png') });
  // Esc closes it, nothing changes, focus returns to the button that opened it.
  await page.keyboard.press('Escape');
  await expect(dialog).toBeHidden();
  await expect(restoreButton).toBeFocused();
  expect((await api<ContextView>(`/v1/sessions/${id}/context?format=canonical`)).contextVersion).toBe(head);

  await restoreButton.click();
  await dialog.getByRole('button', { name: 'Restore snapshot' }).click();
  await expect(dialog).toBeHidden();
  await expect(page.getByTestId('snapshot-status')).toContainText(`Restored: version ${head + 1} now holds the snapshot's version 0`);
  // The API's head moved; the page followed without a reload.
  await expect.poll(async () => (await api<ContextView>(`/v1/sessions/${id}/context?format=canonical`)).contextVersion).toBe(head + 1);
  const restored = await api<ContextView>(`/v1/sessions/${id}/context?format=canonical`);
  expect(restored.messages.some((m) => JSON.stringify(m).includes('[CHECKPOINT'))).toBe(false);
  await expect(page.getByTestId('context-column')).toHaveAttribute('data-context-version', String(head + 1));
  await expect(chart(page)).toHaveAttribute('data-restores', '1');
  await expect(chart(page).locator('svg [data-marker="restore"]')).toHaveCount(1);
  await expect(page.getByTestId('events-list').locator('[data-event-type="snapshot-restored"]')).toHaveCount(1);

  // Undo the last compaction: back to the snapshot taken before it.
  await page.getByRole('button', { name: 'Undo last compaction' }).click();
  const undo = page.getByRole('dialog', { name: 'Undo the last compaction?' });
  await expect(undo).toContainText(jobs[1].slice(0, 8));
  await undo.getByRole('button', { name: 'Undo compaction' }).click();
  await expect(page.getByTestId('action-status')).toContainText(`Compaction undone: version ${head + 2}`);
  await expect.poll(async () => (await api<ContextView>(`/v1/sessions/${id}/context?format=canonical`)).contextVersion).toBe(head + 2);
  await expect(page.getByTestId('context-column')).toHaveAttribute('data-context-version', String(head + 2));
  await expect(chart(page).locator('svg [data-marker="restore"]')).toHaveCount(2);
});

test('create a snapshot with a label', async ({ page, context }) => {
  const id = uniqueId('e2e-snap');
  await seedQuietSession(id);
  await useApiKey(context);
  await page.goto(`/sessions/${id}`);
  await expect(page.getByTestId('snapshots')).toContainText('No snapshots yet');
  const label = `before the refactor ${id}`;
  await page.getByLabel('Label').fill(label);
  await page.getByRole('button', { name: 'Create snapshot' }).click();
  await expect(page.getByTestId('snapshot-status')).toContainText(`Snapshot created (“${label}”)`);
  await expect(page.getByTestId('snapshot').filter({ hasText: label })).toHaveCount(1);
  await expect(page.getByLabel('Label')).toHaveValue('');
  const listed = (await api<{ snapshots: Snapshot[] }>(`/v1/sessions/${id}/snapshots`)).snapshots;
  expect(listed.map((s) => [s.kind, s.label])).toEqual([['manual', label]]);
});

test('the events and snapshots lists page back through all of the history, and back to the newest', async ({ page, context }) => {
  const id = uniqueId('e2e-paging');
  await seedQuietSession(id);
  // 23 manual snapshots (the panel shows 20 a page); each also writes a snapshot-created event (the list shows 50).
  for (let i = 1; i <= 23; i += 1) await api(`/v1/sessions/${id}/snapshots`, { method: 'POST', body: { label: `paging ${String(i).padStart(2, '0')}` } });
  for (let i = 1; i <= 30; i += 1) await api(`/v1/sessions/${id}/snapshots`, { method: 'POST', body: { label: `more ${i}` } });
  const allEvents = (await api<{ events: { id: string }[] }>(`/v1/sessions/${id}/events?limit=500`)).events;
  await useApiKey(context);
  await page.goto(`/sessions/${id}`);
  const snapshots = page.getByTestId('snapshots');
  await expect(snapshots.getByTestId('snapshot')).toHaveCount(20);
  await expect(page.getByTestId('events-list').locator('li')).toHaveCount(50);
  await expect(page.getByTestId('live-state')).toHaveText('Live');

  // Snapshots: three pages of 20, 20 and 13, oldest last; the events list stays where it is.
  // Each page is waited for by its first entry (a count alone could still be the previous page's).
  await snapshots.getByRole('link', { name: 'Older snapshots' }).click();
  await expect(snapshots.getByTestId('snapshot').first()).toContainText('more 10');
  await expect(snapshots.getByTestId('snapshot')).toHaveCount(20);
  await snapshots.getByRole('link', { name: 'Older snapshots' }).click();
  await expect(snapshots.getByTestId('snapshot').first()).toContainText('paging 13');
  await expect(snapshots.getByTestId('snapshot')).toHaveCount(13);
  await expect(snapshots.getByTestId('snapshot').last()).toContainText('paging 01');
  await expect(snapshots.getByRole('link', { name: 'Older snapshots' })).toHaveCount(0);
  await expect(page.getByTestId('events-list').locator('li')).toHaveCount(50);

  // Events: the older page is a fixed slice (not live), and holds the oldest ones.
  await page.getByTestId('events').getByRole('link', { name: 'Older events' }).click();
  await expect(page.getByTestId('live-state')).toHaveText('Older events');
  await expect(page.getByTestId('events-list').locator('li')).toHaveCount(Math.min(50, allEvents.length - 50));
  await expect(page.getByTestId('events-list').locator('li').last()).toHaveAttribute('data-event-id', allEvents[0].id);
  await page.getByTestId('events').getByRole('link', { name: 'Newest events' }).click();
  await expect(page.getByTestId('live-state')).toHaveText('Live');
  await expect(page.getByTestId('events-list').locator('li')).toHaveCount(50);
  await snapshots.getByRole('link', { name: 'Newest snapshots' }).click();
  await expect(snapshots.getByTestId('snapshot').first()).toContainText('more 30');
});

test('every control of the Session page is reachable by keyboard with a visible focus ring', async ({ page, context }) => {
  test.setTimeout(60_000);
  const id = uniqueId('e2e-keys');
  await seedCompactedSession(id, 1);
  await useApiKey(context);
  await page.goto(`/sessions/${id}`);
  await expect(page.getByTestId('live-state')).toHaveText('Live');

  const wanted = ['← Sessions', 'Compact now', 'Undo last compaction', 'Compactions and restores as a table (1)', 'snapshot-label', 'Create snapshot', 'Restore snapshot', 'Summary text', 'Context messages', 'History messages'];
  const reached = new Set<string>();
  await page.locator('body').focus();
  for (let i = 0; i < 400 && wanted.some((w) => !reached.has(w)); i++) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement | null;
      if (!el || el === document.body) return null;
      const style = getComputedStyle(el);
      const name = el.id || el.getAttribute('aria-label') || (el.textContent ?? '').trim().slice(0, 60);
      return { name, outline: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0 };
    });
    if (!focused) continue;
    expect(focused.outline, `visible focus on "${focused.name}"`).toBe(true);
    for (const w of wanted) if (focused.name === w || focused.name.startsWith(w)) reached.add(w);
  }
  expect([...reached].sort()).toEqual([...wanted].sort());
});

test('a session without compactions, an unknown session, and no key', async ({ page, context }) => {
  const id = uniqueId('e2e-fresh');
  await seedQuietSession(id, 8);
  await page.goto(`/sessions/${id}`);
  await expect(page.getByTestId('no-key-notice').getByRole('link', { name: 'Settings' })).toBeVisible();

  await useApiKey(context);
  await page.goto(`/sessions/${id}`);
  await expect(chart(page)).toHaveAttribute('data-compactions', '0');
  await expect(chart(page).locator('svg circle[data-kind="append"]')).toHaveCount(1);
  await expect(page.getByTestId('checkpoints')).toContainText('No checkpoints yet');
  await expect(page.getByTestId('goal')).toContainText('No goal recorded');
  await expect(page.getByTestId('context-column')).toHaveAttribute('data-context-version', 'none');
  await expect(page.locator('[data-testid="history-message"]')).toHaveCount(8);
  await expect(page.locator('[data-testid="history-message"][data-status="verbatim"]')).toHaveCount(8);
  await screenshot(page, 'session-fresh');

  expectNotFoundPage();
  const unknown = await page.goto(`/sessions/${uniqueId('no-such-session')}`);
  // A true 404: the page is not streamed before the session is known.
  expect(unknown?.status()).toBe(404);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Session not found');
  await expect(page.getByRole('link', { name: 'Back to Sessions' })).toHaveAttribute('href', '/sessions');
  await screenshot(page, 'session-not-found');
});

test('a session of 30,001 usage points: the chart draws the whole history, with every marker past the 20,000th point', async ({ page, context }) => {
  const id = uniqueId('e2e-long-usage');
  await seedQuietSession(id, 8);
  // The points are written straight into the e2e database: 30,000 appends through the API would take minutes.
  const db = new Client({ connectionString: process.env.E2E_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/compactor_e2e' });
  await db.connect();
  try {
    await db.query(
      `INSERT INTO usage_points (session_id, kind, seq, context_tokens, budget, threshold)
       SELECT s.id, CASE WHEN g IN (5000, 21000, 27000) THEN 'compaction' WHEN g = 24000 THEN 'restore' ELSE 'append' END, 8 + g,
              CASE WHEN g = 22222 THEN 30000 WHEN g IN (5000, 21000, 27000) THEN 2000 ELSE 4000 + g % 1000 END, first.budget, first.threshold
       FROM sessions s, generate_series(1, 30000) g, (SELECT budget, threshold FROM usage_points u JOIN sessions x ON x.id = u.session_id WHERE x.external_id = $1 LIMIT 1) first
       WHERE s.external_id = $1`,
      [id],
    );
  } finally {
    await db.end();
  }
  const whole = await api<UsageSeries & { totalPoints: number }>(`/v1/sessions/${id}/usage?maxPoints=600`);
  expect(whole.totalPoints).toBe(30_001);
  await useApiKey(context);
  await page.goto(`/sessions/${id}`);
  await expect(chart(page)).toHaveAttribute('data-points', '30001');
  await expect(chart(page)).toHaveAttribute('data-drawn', String(whole.points.length));
  await expect(chart(page)).toHaveAttribute('data-appends', '29997');
  await expect(chart(page).locator('svg [data-marker="compaction"]')).toHaveCount(3);
  await expect(chart(page).locator('svg [data-marker="restore"]')).toHaveCount(1);
  await expect(chart(page).locator('figcaption')).toContainText(`30,001 points (29,997 appends, 3 compactions, 1 restore) up to message 30008.`);
  await expect(chart(page).locator('figcaption')).toContainText(`${whole.points.length} of 30,001 points drawn over the whole history:`);
  await expect(chart(page).locator('figcaption')).not.toContainText('first 20,000');
  // The peak past the old cut (30,000 tokens, over the budget) is on the line: the y axis reaches above it (15K without it).
  await expect(chart(page).locator('svg text', { hasText: /^33K$/ })).toHaveCount(1);
  await screenshot(page, 'session-long-usage');
});

test('a session with a finished job shows its snapshots list and waits for nothing', async ({ page, context }) => {
  // A manual compaction that saves too little is recorded as skipped; the page shows that event too.
  const id = uniqueId('e2e-skip');
  await seedQuietSession(id, 8);
  const { job } = await api<{ job: { id: string } }>(`/v1/sessions/${id}/compact`, { method: 'POST', body: {} });
  expect((await finished(job.id)).status).toBe('skipped');
  await useApiKey(context);
  await page.goto(`/sessions/${id}`);
  await expect(page.getByTestId('events-list').locator('[data-event-type="compression-skipped"]')).toHaveCount(1);
  await expect(page.getByTestId('compaction-progress')).toBeEmpty();
});
