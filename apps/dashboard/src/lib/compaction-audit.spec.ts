import { auditedEvents, costText, ledgerCountsText, prefixText, tokensText } from './compaction-audit';
import type { EventView } from './session-events';

const ev = (id: number, type: string, data: Record<string, unknown>): EventView => ({ id: String(id), type, line: `${type} ${id}`, data, createdAt: '2026-11-25T14:00:00.000Z' });

const figures = { tokensBefore: 12_400, tokensAfter: 3_100, llmCalls: 2, costUsd: 0.0012, contextMessagesBefore: 41, sharedPrefixMessages: 3, prefixChanged: true };
const ledger = {
  listed: 12,
  kept: 8,
  repaired: 3,
  dropped: 1,
  keptEntries: [{ kind: 'path', text: 'src/a.ts (edited)', seq: 4 }],
  repairedEntries: [{ kind: 'constraint', text: '"never touch prod"', seq: 2 }],
  droppedEntries: [{ kind: 'url', text: 'https://x.test', seq: 7 }],
};

describe('compaction audit', () => {
  it('says tokens, cost and the prompt prefix in plain words', () => {
    expect(tokensText(12_400, 3_100)).toBe('12,400 → 3,100 tokens (saved 9,300)');
    expect(tokensText(100, 120)).toBe('100 → 120 tokens (20 more)');
    expect(costText(0.0012, 2)).toBe('$0.0012 · 2 LLM calls');
    expect(costText(0, 1)).toBe('$0.00 · 1 LLM call');
    expect(costText(0, 0)).toBe('No LLM calls');
    expect(prefixText(false, 41, 41)).toBe('Unchanged');
    expect(prefixText(true, 3, 41)).toBe('Kept the first 3 of 41 messages');
    expect(prefixText(true, 0, 41)).toBe('Changed from the first message (of 41)');
    expect(ledgerCountsText(ledger)).toBe('12 listed · 8 kept · 3 appended · 1 left out');
  });

  it("folds the facts-ledger event into its job's compressed event, keeping the list's order", () => {
    const rows = auditedEvents([ev(5, 'compressed', { jobId: 'j1', ...figures }), ev(4, 'facts-ledger', { jobId: 'j1', ...ledger }), ev(3, 'checkpoint-created', { jobId: 'j1' })]);
    expect(rows.map((r) => r.event.id)).toEqual(['5', '3']);
    expect(rows[0].audit).toEqual({
      jobId: 'j1',
      tokens: '12,400 → 3,100 tokens (saved 9,300)',
      cost: '$0.0012 · 2 LLM calls',
      prefix: { text: 'Kept the first 3 of 41 messages', changed: true },
      ledger: { ...ledger, text: '12 listed · 8 kept · 3 appended · 1 left out' },
    });
    expect(rows[1].audit).toBeNull();
  });

  it('adds up the ledgers of a run that wrote several checkpoints', () => {
    const rows = auditedEvents([ev(3, 'compressed', { jobId: 'j1', ...figures }), ev(2, 'facts-ledger', { jobId: 'j1', ...ledger }), ev(1, 'facts-ledger', { jobId: 'j1', ...ledger })]);
    expect(rows).toHaveLength(1);
    expect(rows[0].audit?.ledger).toMatchObject({ listed: 24, kept: 16, repaired: 6, dropped: 2 });
    expect(rows[0].audit?.ledger?.droppedEntries).toHaveLength(2);
  });

  it('keeps a facts-ledger row whose compressed event is not in the list, and never pairs two jobs', () => {
    const rows = auditedEvents([ev(9, 'compressed', { jobId: 'j2', ...figures, prefixChanged: false, sharedPrefixMessages: 41 }), ev(2, 'facts-ledger', { jobId: 'j1', ...ledger })]);
    expect(rows.map((r) => r.event.type)).toEqual(['compressed', 'facts-ledger']);
    expect(rows[0].audit).toMatchObject({ ledger: null, prefix: { text: 'Unchanged', changed: false } });
    expect(rows[1].audit).toMatchObject({ jobId: 'j1', tokens: null, ledger: { kept: 8 } });
  });

  it('shows what an older or malformed event has, and nothing it cannot check', () => {
    const rows = auditedEvents([
      ev(3, 'compressed', { jobId: 'j3' }),
      ev(2, 'compressed', { jobId: 'j4', tokensBefore: '12' }),
      ev(1, 'facts-ledger', { jobId: 'j5', listed: 1 }),
    ]);
    expect(rows[0].audit).toEqual({ jobId: 'j3', tokens: null, cost: null, prefix: null, ledger: null });
    expect(rows[1].audit).toBeNull();
    expect(rows[2].audit).toBeNull();
  });
});
