import { checkpointAnchor, checkpointTimeline, currentCheckpointId, type CheckpointView } from './session-checkpoints';

const ckpt = (over: Partial<CheckpointView> & Pick<CheckpointView, 'id' | 'fromSeq' | 'toSeq' | 'level'>): CheckpointView => ({
  text: `summary of ${over.fromSeq}–${over.toSeq}`,
  tokens: 600,
  originalTokens: 6_000,
  agedFrom: null,
  inContext: true,
  keyDecisions: [],
  filesModified: [],
  nextSteps: [],
  factsSurvived: 0.9,
  facts: null,
  createdAt: '2026-11-23T14:25:01.000Z',
  ...over,
});

const checkpoints = [
  ckpt({ id: 'ckpt_a', fromSeq: 2, toSeq: 28, level: 'recent', tokens: 1_367, originalTokens: 7_270, inContext: false }),
  ckpt({ id: 'ckpt_b', fromSeq: 2, toSeq: 28, level: 'old', tokens: 677, originalTokens: 7_270, agedFrom: 'ckpt_a', createdAt: '2026-11-23T14:25:02.000Z' }),
  ckpt({ id: 'ckpt_c', fromSeq: 29, toSeq: 65, level: 'recent', tokens: 1_358, originalTokens: 5_125 }),
];

describe('checkpointTimeline', () => {
  it('puts each checkpoint in the lane of its level, positioned on the seq axis', () => {
    const timeline = checkpointTimeline(checkpoints, 100);
    expect(timeline.lanes.map((l) => [l.level, l.checkpoints.map((c) => c.id)])).toEqual([
      ['recent', ['ckpt_a', 'ckpt_c']],
      ['old', ['ckpt_b']],
      ['ancient', []],
      ['ultra', []],
    ]);
    const b = timeline.lanes[1].checkpoints[0];
    expect(b).toMatchObject({
      range: 'messages 2–28',
      sizeText: '677 of 7,270 tokens (9%)',
      inContext: true,
      agedFrom: { id: 'ckpt_a', anchor: 'checkpoint-ckpt_a' },
      agedInto: null,
      factsSurvived: '90%',
      bar: { left: 1, width: 27 },
    });
    expect(timeline.lanes[0].checkpoints[0].agedInto).toEqual({ id: 'ckpt_b', anchor: 'checkpoint-ckpt_b' });
    expect(timeline).toMatchObject({ total: 3, inContext: 2 });
    expect(timeline.summary).toBe('3 checkpoints, 2 in the context: messages 2–28 at level old (677 tokens); messages 29–65 at level recent (1,358 tokens).');
  });

  it("carries a checkpoint's Facts section, and none when it is empty", () => {
    const timeline = checkpointTimeline([ckpt({ id: 'ckpt_f', fromSeq: 1, toSeq: 9, level: 'recent', facts: '- Files: src/a.ts (edited)\r\n- URLs: https://x.test' }), ckpt({ id: 'ckpt_g', fromSeq: 10, toSeq: 12, level: 'recent', facts: '  ' })], 12);
    expect(timeline.lanes[0].checkpoints.map((c) => c.facts)).toEqual(['- Files: src/a.ts (edited)\n- URLs: https://x.test', null]);
  });

  it('says when nothing was summarized yet', () => {
    const timeline = checkpointTimeline([], 12);
    expect(timeline.total).toBe(0);
    expect(timeline.lanes.every((l) => l.checkpoints.length === 0)).toBe(true);
    expect(timeline.summary).toBe('No checkpoints yet: nothing has been summarized.');
  });
});

describe('currentCheckpointId', () => {
  it('follows aging to the checkpoint in the context', () => {
    expect(currentCheckpointId('ckpt_a', checkpoints)).toBe('ckpt_b');
    expect(currentCheckpointId('ckpt_c', checkpoints)).toBe('ckpt_c');
  });

  it('stops at the newest descendant when none is in the context, and never loops', () => {
    const gone = [ckpt({ id: 'x', fromSeq: 1, toSeq: 2, level: 'recent', inContext: false }), ckpt({ id: 'y', fromSeq: 1, toSeq: 2, level: 'old', inContext: false, agedFrom: 'x' })];
    expect(currentCheckpointId('x', gone)).toBe('y');
    const loop = [ckpt({ id: 'p', fromSeq: 1, toSeq: 2, level: 'old', inContext: false, agedFrom: 'q' }), ckpt({ id: 'q', fromSeq: 1, toSeq: 2, level: 'old', inContext: false, agedFrom: 'p' })];
    expect(['p', 'q']).toContain(currentCheckpointId('p', loop));
  });

  it('makes anchors that are valid element ids', () => {
    expect(checkpointAnchor('ckpt_1f0c…x')).toBe('checkpoint-ckpt_1f0c_x');
  });
});
