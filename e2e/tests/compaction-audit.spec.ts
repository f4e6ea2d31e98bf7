import { expect, test, type Page } from '@playwright/test';
import { resolve } from 'node:path';
import { failOnConsoleErrors } from '../console-errors';
import { api, seedQuietSession, uniqueId, useApiKey, type ContextView } from '../session-seed';

// Issue #14 item 6: "Compact now" shows a dry run before anything changes, and each compaction's
// audit (tokens, cost, prompt prefix, facts ledger) is in the events list. Real API, worker and browser.

const screenshotDir = resolve(__dirname, '../../test-results/screenshots');

failOnConsoleErrors(test);

interface Entry {
  kind: string;
  text: string;
  seq: number;
}
interface DryRun {
  job: { id: string; status: string; tokensBefore: number; tokensAfter: number };
  savedTokens: number;
  context: { messages: unknown[] };
  ledger: { listed: number; kept: number; repaired: number; dropped: number; droppedEntries: Entry[]; check: { total: number; survived: number; missing: Entry[] } };
}
interface Event {
  id: string;
  type: string;
  data: Record<string, unknown>;
}

const tokens = (n: number) => n.toLocaleString('en-US');
const contextVersion = async (id: string) => (await api<ContextView>(`/v1/sessions/${id}/context?format=canonical`)).contextVersion;

async function openPreview(page: Page) {
  await page.getByRole('button', { name: 'Compact now' }).click();
  const dialog = page.getByRole('dialog', { name: 'Preview compaction' });
  await expect(dialog).toBeVisible();
  await expect(dialog.getByTestId('compaction-preview')).toHaveAttribute('data-state', 'ready', { timeout: 20_000 });
  return dialog;
}

test('Compact now previews the compaction; Cancel changes nothing, Apply compacts, and the events show its audit', async ({ page, context }) => {
  test.setTimeout(90_000);
  const id = uniqueId('e2e-audit');
  // A Facts section of at most 50 tokens over 32 messages of a real trace: the checkpoint must leave facts out, so there are facts to drop.
  await seedQuietSession(id, 32, { ledgerFraction: 0.001 });
  // The same dry run the dialog asks for: the preview must show what the API says (the local summarizer is deterministic).
  const dry = await api<DryRun>(`/v1/sessions/${id}/compact`, { method: 'POST', body: { dryRun: true, format: 'canonical' } });
  expect(dry.job.status).toBe('succeeded');
  expect(dry.ledger.check.missing.length, 'the seeded session has facts a compaction would drop').toBeGreaterThan(0);
  expect(await contextVersion(id)).toBeNull();

  await useApiKey(context);
  await page.goto(`/sessions/${id}`);
  await expect(page.getByTestId('live-state')).toHaveText('Live');

  // 1. The preview: tokens before → after, the facts it would drop, the would-be context.
  let dialog = await openPreview(page);
  expect(await dialog.evaluate((d) => d.matches(':modal'))).toBe(true);
  await expect(dialog.getByRole('button', { name: 'Cancel' })).toBeFocused();
  await expect(dialog.getByTestId('preview-tokens')).toHaveText(`${tokens(dry.job.tokensBefore)} → ${tokens(dry.job.tokensAfter)} tokens (saved ${tokens(dry.savedTokens)})`);
  await expect(dialog.getByTestId('preview-ledger')).toHaveText(`${dry.ledger.listed} listed · ${dry.ledger.kept} kept · ${dry.ledger.repaired} appended · ${dry.ledger.dropped} left out`);
  const drops = dialog.getByTestId('preview-drops').locator('li');
  const wouldDrop = new Set([...dry.ledger.check.missing, ...dry.ledger.droppedEntries].map((e) => `${e.kind}:${e.text}`));
  await expect(drops).toHaveCount(wouldDrop.size);
  for (const e of dry.ledger.check.missing) await expect(dialog.getByTestId('preview-drops')).toContainText(e.text);
  await expect(dialog).toContainText(`${dry.ledger.check.total - dry.ledger.check.survived} of ${dry.ledger.check.total} facts would no longer be in the context`);
  const contextDetails = dialog.getByTestId('preview-context');
  await expect(contextDetails.locator('summary')).toContainText(`New context: ${dry.context.messages.length} messages`);
  await contextDetails.locator('summary').click();
  await expect(contextDetails.getByTestId('preview-checkpoint').first()).toBeVisible();
  await page.screenshot({ path: resolve(screenshotDir, 'compaction-preview-context.png') });
  await contextDetails.locator('summary').click();
  await page.screenshot({ path: resolve(screenshotDir, 'compaction-preview.png') });

  // 2. Cancel: the dialog closes, nothing is compacted.
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await expect(dialog).toBeHidden();
  await expect(page.getByRole('button', { name: 'Compact now' })).toBeFocused();
  expect(await contextVersion(id)).toBeNull();
  await expect(page.getByTestId('compaction-count')).toHaveText('0');
  await expect(page.getByTestId('events-list').locator('[data-event-type="compressed"]')).toHaveCount(0);

  // 3. Again, and Apply: a real compaction writes a new context version.
  dialog = await openPreview(page);
  await dialog.getByRole('button', { name: 'Apply' }).click();
  await expect(dialog).toBeHidden();
  await expect(page.getByTestId('action-status')).toContainText('Compaction queued');
  await expect.poll(() => contextVersion(id), { timeout: 30_000 }).toBe(1);

  // 4. Its audit in the events list, with the figures and the ledger its events recorded.
  const events = (await api<{ events: Event[] }>(`/v1/sessions/${id}/events?limit=100`)).events;
  const compressed = events.find((e) => e.type === 'compressed')!;
  const factsLedger = events.find((e) => e.type === 'facts-ledger' && e.data.jobId === compressed.data.jobId)!;
  expect(factsLedger, 'the compaction summarized, so it wrote a facts-ledger event').toBeDefined();
  const figures = compressed.data as { tokensBefore: number; tokensAfter: number; llmCalls: number; contextMessagesBefore: number; sharedPrefixMessages: number; prefixChanged: boolean };
  const ledger = factsLedger.data as { listed: number; kept: number; repaired: number; dropped: number };

  const row = page.getByTestId('events-list').locator('[data-event-type="compressed"]');
  await expect(row).toHaveCount(1);
  const audit = row.getByTestId('compaction-audit');
  await expect(audit).toHaveAttribute('data-job-id', String(compressed.data.jobId));
  await expect(audit.getByTestId('audit-tokens')).toHaveText(`${tokens(figures.tokensBefore)} → ${tokens(figures.tokensAfter)} tokens (saved ${tokens(figures.tokensBefore - figures.tokensAfter)})`);
  await expect(audit.getByTestId('audit-ledger')).toHaveText(`${ledger.listed} listed · ${ledger.kept} kept · ${ledger.repaired} appended · ${ledger.dropped} left out`);
  await expect(audit.getByTestId('audit-cost')).toContainText(figures.llmCalls === 0 ? 'No LLM calls' : `${figures.llmCalls} LLM call`);
  await expect(audit.getByTestId('audit-prefix')).toHaveText(
    figures.prefixChanged ? `Kept the first ${figures.sharedPrefixMessages} of ${figures.contextMessagesBefore} messages` : 'Unchanged',
  );
  // The facts-ledger event is folded into its compaction's row.
  await expect(page.getByTestId('events-list').locator('[data-event-type="facts-ledger"]')).toHaveCount(0);
  await page.getByTestId('events').screenshot({ path: resolve(screenshotDir, 'compaction-audit.png') });
  await audit.getByText('Facts ledger entries').click();
  for (const group of ['kept', 'repaired', 'dropped'] as const) {
    await expect(audit.getByTestId(`ledger-${group}`)).toHaveAttribute('data-count', String(ledger[group]));
  }
  await expect(audit.getByTestId('ledger-dropped').locator('li')).toHaveCount(Math.min(ledger.dropped, 40));
  await page.getByTestId('events').screenshot({ path: resolve(screenshotDir, 'compaction-audit-ledger.png') });

  // 5. The new checkpoint shows its Facts section when it has one.
  const checkpoints = (await api<{ checkpoints: { id: string; facts: string | null }[] }>(`/v1/sessions/${id}/checkpoints`)).checkpoints;
  expect(checkpoints).toHaveLength(1);
  const card = page.getByTestId('checkpoints').getByTestId('checkpoint');
  await expect(card).toHaveCount(1);
  if (checkpoints[0].facts) {
    await card.getByText('Facts section').click();
    await expect(card.getByTestId('checkpoint-facts').locator('pre')).toContainText(checkpoints[0].facts.split('\n')[0]);
  } else {
    await expect(card.getByTestId('checkpoint-facts')).toHaveCount(0);
  }
  await page.screenshot({ path: resolve(screenshotDir, 'compaction-audit-page.png'), fullPage: true });
});
