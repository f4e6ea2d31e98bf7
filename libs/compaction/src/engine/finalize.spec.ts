import { countTextSync, resolveModel } from '@compactor/tokens';
import { Block, CanonicalMessage } from '../messages/canonical';
import { countableParts } from '../messages/countable';
import { FactsLedger } from '../ledger/ledger';
import { EMPTY_GOAL_RECORD } from './goal-markers';
import { finalizeCompaction, FinalizeCompactionInput } from './finalize';
import { CompactionOutcome, CountMessage, SessionMessage } from './types';
import { Checkpoint, contentId, EMPTY_PREFIX, goalBlockMessage, VersionPrefix } from './version';

const countText = (t: string) => countTextSync(t, 'o200k_base');
const count: CountMessage = (m) => 3 + countableParts(m).texts.reduce((n, t) => n + countText(t), 0);
const text = (t: string): Block => ({ type: 'text', text: t });

const messages: CanonicalMessage[] = [
  { role: 'user', blocks: [text('Fix the failing test in src/app.ts and keep the API stable.')] },
  { role: 'assistant', blocks: [text('Reading src/app.ts.'), { type: 'tool_use', id: 'c1', name: 'read_file', input: { path: 'src/app.ts' } }] },
  { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'c1', content: 'export const answer = 41; // ERR_ANSWER_WRONG', isError: false }] },
  { role: 'assistant', blocks: [text('I will edit src/app.ts to return 42.')] },
  { role: 'user', blocks: [text('Go ahead.')] },
];
const stored: SessionMessage[] = messages.map((message, i) => ({ seq: i + 1, message, tokens: count(message) }));

function checkpoint(fromSeq: number, toSeq: number, body: string): Checkpoint {
  return { id: contentId('ckpt', fromSeq, toSeq, body), fromSeq, toSeq, level: 0, text: body, tokens: countText(body), originalTokens: 100 };
}

/** A succeeded outcome that summarized messages 1–3 into one checkpoint. */
function summarizedOutcome(extra: Checkpoint[] = []): CompactionOutcome {
  const fresh = checkpoint(1, 3, 'The user asked to fix src/app.ts; the answer constant is wrong.');
  const prefix: VersionPrefix = {
    coversThroughSeq: 3,
    checkpoints: [...extra, fresh],
    treatments: { 1: { kind: 'summarized', checkpointId: fresh.id }, 2: { kind: 'summarized', checkpointId: fresh.id }, 3: { kind: 'summarized', checkpointId: fresh.id } },
  };
  return {
    status: 'succeeded',
    prefix,
    tokensBefore: 500,
    tokensAfter: 200,
    steps: ['summarize'],
    usage: { inputTokens: 10, outputTokens: 5, costUsd: 0.01 },
    llmCalls: 1,
    events: [
      { type: 'checkpoint-created', line: 'Summarized 3 messages → 1 checkpoint' },
      { type: 'compressed', line: 'Compacted 500 → 200 tokens' },
    ],
    artifacts: [],
  };
}

const baseInput = (outcome: CompactionOutcome, before: VersionPrefix = EMPTY_PREFIX): FinalizeCompactionInput => ({
  outcome,
  stored,
  history: stored,
  before,
  ledger: FactsLedger.of(stored),
  goal: EMPTY_GOAL_RECORD,
  budget: 10_000,
  model: resolveModel('gpt-4o').spec,
  compactionsBefore: 0,
  figures: { tokensBefore: 500, tokensAfter: 200, llmCalls: 1, llmCostUsd: 0.01 },
  countMessage: count,
  countText,
});

describe('finalizeCompaction (the pure part of the compaction use case)', () => {
  it('puts the session goal in the goal block and counts it on top of the outcome', () => {
    const final = finalizeCompaction({ ...baseInput(summarizedOutcome()), goal: { ...EMPTY_GOAL_RECORD, goal: 'Make the test suite green' } });
    expect(final.goalBlock?.text).toContain('Make the test suite green');
    expect(final.goalBlock?.tokens).toBe(count(goalBlockMessage(final.goalBlock?.text ?? '')));
    expect(final.contextTokens).toBe(200 + (final.goalBlock?.tokens ?? 0));
    expect(final.prefixTokens).toBe(final.checkpoints.reduce((n, c) => n + c.tokens, 0) + (final.goalBlock?.tokens ?? 0));
  });

  it("without a goal, keeps the session's first request in the goal block once it is summarized", () => {
    const final = finalizeCompaction(baseInput(summarizedOutcome()));
    expect(final.goalBlock?.text).toContain("TASK (the session's first request):");
    expect(final.goalBlock?.text).toContain('Fix the failing test in src/app.ts');
  });

  it('gives new checkpoints their seed 004 fields and the ledger check, and leaves the head’s own as they are', () => {
    const old = checkpoint(1, 1, 'An older checkpoint.');
    const before: VersionPrefix = { coversThroughSeq: 1, checkpoints: [old], treatments: { 1: { kind: 'summarized', checkpointId: old.id } } };
    const final = finalizeCompaction(baseInput(summarizedOutcome([old]), before));
    expect(final.checkpoints[0]).toEqual(old);
    const fresh = final.checkpoints[1];
    expect(fresh.filesModified).toBeDefined();
    expect(fresh.factsLedger?.total).toBe(final.ledgerCheck.ledger.total);
    expect(fresh.factsSurvived).toBe(final.ledgerCheck.survival.share);
    expect(final.reliability.contextConfidence).toBe(final.ledgerCheck.survival.share);
    expect(final.reliability.score).toBeGreaterThan(0);
  });

  it('adds the run’s figures to the compressed event only', () => {
    const final = finalizeCompaction(baseInput(summarizedOutcome()));
    expect(final.events[0].data).toBeUndefined();
    expect(final.events[1].data).toMatchObject({ tokensBefore: 500, tokensAfter: 200, llmCalls: 1, costUsd: 0.01, contextMessagesBefore: 5, prefixChanged: true });
  });

  it('lists the artifacts the new prefix refers to', () => {
    const outcome = summarizedOutcome();
    outcome.prefix.treatments[5] = { kind: 'offloaded', artifactIds: ['art_1', 'art_2'], message: messages[4], tokens: 3 };
    expect(finalizeCompaction(baseInput(outcome)).artifactIds).toEqual(['art_1', 'art_2']);
  });
});
