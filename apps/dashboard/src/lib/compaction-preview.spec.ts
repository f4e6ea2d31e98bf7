import type { components } from '../api/schema';
import { checkpointTexts, compactionPreview, compactionPreviewSchema, parsePreviewAnswer, PREVIEW_MESSAGES } from './compaction-preview';

type CompactResponse = components['schemas']['CompactResponse'];
type JobView = components['schemas']['JobView'];

const job = (over: Partial<JobView> = {}): JobView => ({
  id: '0f8e4c1a-1111-4222-8333-444455556666',
  sessionId: 's1',
  trigger: 'manual',
  status: 'succeeded',
  dryRun: true,
  steps: ['summarize'],
  llmCalls: 1,
  llmInputTokens: 5_000,
  llmOutputTokens: 300,
  llmCostUsd: 0,
  tokensBefore: 7_000,
  tokensAfter: 2_000,
  createdAt: '2026-11-25T14:00:00.000Z',
  ...over,
});

const checkpointMessage = { role: 'system', tags: ['checkpoint'], blocks: [{ type: 'text', text: '[CHECKPOINT ckpt_ab12 · messages 2–20]\nThe agent fixed the parser.\n\nFacts (from the ledger, verbatim):\n- Files: src/a.ts' }] };
const context = { tokens: 2_000, messages: [{ role: 'system', blocks: [{ type: 'text', text: 'You are an agent.' }] }, checkpointMessage, { role: 'user', blocks: [{ type: 'text', text: 'next' }] }] };
const ledger = {
  listed: 5,
  kept: 2,
  repaired: 2,
  dropped: 1,
  keptEntries: [],
  repairedEntries: [{ kind: 'path', text: 'src/a.ts', seq: 3 }],
  droppedEntries: [{ kind: 'url', text: 'https://x.test', seq: 9 }],
  check: { total: 40, survived: 37, missing: [{ kind: 'url', text: 'https://x.test', seq: 9 }, { kind: 'error', text: 'TypeError: x is undefined', seq: 12 }, { kind: 'command', text: '`npm test` (exit 1)', seq: 14 }] },
};

describe('compactionPreview', () => {
  it('shows tokens, the would-be context with its checkpoint text, and each fact it would drop once', () => {
    const preview = compactionPreview({ job: job(), savedTokens: 5_000, context, ledger } as CompactResponse);
    expect(preview).toMatchObject({
      kind: 'ready',
      tokens: '7,000 → 2,000 tokens (saved 5,000)',
      cost: '$0.00 · 1 LLM call',
      context: { messages: 3, tokens: 2_000, checkpoints: [{ title: 'Messages 2–20', text: 'The agent fixed the parser.\n\nFacts (from the ledger, verbatim):\n- Files: src/a.ts' }] },
      ledger: { text: '5 listed · 2 kept · 2 appended · 1 left out' },
      dropsText: '3 of 40 facts would no longer be in the context',
      truncated: false,
    });
    if (preview.kind !== 'ready') throw new Error('not ready');
    expect(preview.drops.map((d) => d.text)).toEqual(['https://x.test', 'TypeError: x is undefined', '`npm test` (exit 1)']);
    // The view crosses to the browser as JSON and is checked there by the same schema.
    expect(compactionPreviewSchema.parse(JSON.parse(JSON.stringify(preview)))).toEqual(preview);
  });

  it('says when the API sent only the first of the missing facts', () => {
    const preview = compactionPreview({ job: job(), context, ledger: { check: { total: 100, survived: 20, missing: ledger.check.missing } } } as CompactResponse);
    expect(preview).toMatchObject({ kind: 'ready', ledger: null, truncated: true, dropsText: '80 of 100 facts would no longer be in the context' });
  });

  it('explains a dry run that did not finish, found nothing to do, failed or came back empty', () => {
    expect(compactionPreview({ job: job({ status: 'running', tokensBefore: null, tokensAfter: null }) })).toEqual({ kind: 'unavailable', reason: 'timeout', message: PREVIEW_MESSAGES.timeout, canApply: true });
    expect(compactionPreview({ job: job({ status: 'queued' }) })).toMatchObject({ reason: 'timeout' });
    expect(compactionPreview({ job: job({ status: 'skipped', reason: 'history-too-short' }) })).toEqual({
      kind: 'unavailable',
      reason: 'skipped',
      message: 'Nothing to compact now (history-too-short): a compaction would change nothing.',
      canApply: false,
    });
    expect(compactionPreview({ job: job({ status: 'failed', error: 'llm-timeout' }) })).toMatchObject({ reason: 'failed', message: 'The preview failed: llm-timeout.', canApply: true });
    expect(compactionPreview({ job: job() })).toMatchObject({ reason: 'empty', message: PREVIEW_MESSAGES.empty });
    expect(compactionPreview({ job: job(), context: { tokens: 'many', messages: [] } })).toMatchObject({ reason: 'empty' });
  });

  it('reads checkpoint messages only, with or without the header', () => {
    expect(checkpointTexts([{ role: 'user', blocks: [{ type: 'text', text: '[CHECKPOINT fake · messages 1–2]' }] }])).toEqual([]);
    expect(checkpointTexts([{ role: 'system', tags: ['checkpoint'], blocks: [{ type: 'text', text: 'plain\r\nsummary' }] }])).toEqual([{ title: 'Checkpoint', text: 'plain\nsummary' }]);
  });
});

describe('parsePreviewAnswer', () => {
  it('accepts a checked preview and turns anything else into a sentence', () => {
    const preview = { kind: 'unavailable', reason: 'skipped', message: 'Nothing to compact now.', canApply: false };
    expect(parsePreviewAnswer(200, { preview })).toEqual(preview);
    expect(parsePreviewAnswer(401, { error: { message: 'No API key: enter one in Settings.' } })).toEqual({
      kind: 'unavailable',
      reason: 'error',
      message: 'No API key: enter one in Settings.',
      canApply: false,
    });
    expect(parsePreviewAnswer(504, { error: { message: 'The preview did not finish in time.' } })).toMatchObject({ canApply: true });
    expect(parsePreviewAnswer(200, { preview: { kind: 'ready', tokens: 5 } })).toMatchObject({ reason: 'error', message: 'The preview could not be read (HTTP 200).' });
    expect(parsePreviewAnswer(502, null)).toMatchObject({ message: 'The preview could not be read (HTTP 502).' });
  });
});
