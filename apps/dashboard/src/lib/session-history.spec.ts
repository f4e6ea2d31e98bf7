import {
  blockViews,
  contextRows,
  historyAfterFor,
  historyRows,
  historyWindow,
  protectionReasons,
  sentSeqs,
  treatmentsFromDiff,
  type HistoryMessage,
  type VersionDiff,
} from './session-history';

const diff: Pick<VersionDiff, 'messages'> = {
  messages: {
    masked: [{ seq: 6, was: null }],
    offloaded: [{ seq: 8, was: null, artifactIds: ['art_0123456789'] }],
    summarized: [
      { seq: 2, was: null, checkpointId: 'ckpt_a' },
      { seq: 3, was: null, checkpointId: 'ckpt_a' },
    ],
    compressed: [],
    dropped: [{ seq: 4, was: null }],
    restored: [],
  },
};

const message = (seq: number, role: HistoryMessage['role'], blocks: unknown[], over: Partial<HistoryMessage> = {}) =>
  ({ seq, role, tokens: 10 * seq, pinned: false, tags: [], blocks: blocks as HistoryMessage['blocks'], createdAt: '2026-11-23T14:00:00.000Z', ...over });

describe('treatmentsFromDiff', () => {
  it('maps each treated seq to what the head version did to it', () => {
    expect(treatmentsFromDiff(diff)).toEqual({
      2: { kind: 'summarized', checkpointId: 'ckpt_a' },
      3: { kind: 'summarized', checkpointId: 'ckpt_a' },
      4: { kind: 'dropped' },
      6: { kind: 'masked' },
      8: { kind: 'offloaded', artifactIds: ['art_0123456789'] },
    });
    expect(treatmentsFromDiff(null)).toEqual({});
  });
});

describe('blockViews', () => {
  it('titles each block and collapses long tool output, keeping a preview', () => {
    const long = Array.from({ length: 400 }, (_, i) => `line ${i}`).join('\n');
    const [text, call, result, error] = blockViews([
      { type: 'text', text: 'run the tests' },
      { type: 'tool_use', id: 'c1', name: 'bash', input: { command: 'pytest' } },
      { type: 'tool_result', toolUseId: 'c1', content: long, isError: false },
      { type: 'tool_result', toolUseId: 'c2', content: [{ type: 'text', text: 'boom, see art_abcdef123' }], isError: true },
    ]);
    expect(text).toMatchObject({ kind: 'text', title: 'Text', body: 'run the tests', collapsed: false, omitted: 0 });
    expect(call).toMatchObject({ kind: 'tool_use', title: 'Tool call: bash', body: '{\n  "command": "pytest"\n}' });
    expect(result).toMatchObject({ kind: 'tool_result', title: 'Tool output', lines: 400, collapsed: true });
    expect(result.body).toHaveLength(2_000);
    expect(result.omitted).toBe(long.length - 2_000);
    expect(error).toMatchObject({ title: 'Tool error', isError: true, artifactIds: ['art_abcdef123'] });
  });

  it('shows unknown and provider-only blocks as JSON rather than dropping them', () => {
    const [opaque, odd] = blockViews([{ type: 'opaque', provider: 'anthropic', raw: { type: 'document' } }, { type: 'mystery', x: 1 }]);
    expect(opaque.title).toBe('Provider block (anthropic)');
    expect(odd.body).toContain('"mystery"');
  });
});

describe('protectionReasons', () => {
  const protection = { latestFromSeq: 9, userTextSeqs: [5, 9] };
  it('names every rule that protects a message', () => {
    expect(protectionReasons({ seq: 1, role: 'system' }, protection)).toEqual(['system']);
    expect(protectionReasons({ seq: 3, role: 'assistant', pinned: true }, protection)).toEqual(['pinned']);
    expect(protectionReasons({ seq: 5, role: 'user' }, protection)).toEqual(['user-text']);
    expect(protectionReasons({ seq: 9, role: 'user' }, protection)).toEqual(['latest', 'user-text']);
    expect(protectionReasons({ seq: 0, role: 'system', tags: ['goal'] }, protection)).toEqual(['goal']);
    expect(protectionReasons({ seq: 7, role: 'tool' }, undefined)).toEqual([]);
  });
});

describe('context and history side by side', () => {
  const context = {
    messages: [
      { role: 'system', blocks: [{ type: 'text', text: 'You are an agent.' }] },
      { role: 'system', tags: ['goal'], blocks: [{ type: 'text', text: 'GOAL: fix the bug' }] },
      { role: 'system', tags: ['checkpoint'], blocks: [{ type: 'text', text: '[CHECKPOINT ckpt_b · messages 2–3]\nDecisions…' }] },
      { role: 'user', blocks: [{ text: 'kept user text' }] },
      { role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 'c', content: '[masked tool output: bash, 40 lines]' }] },
      { role: 'assistant', blocks: [{ type: 'text', text: 'ok' }] },
      { role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 'd', content: '[offloaded: art_0123456789]' }] },
      { role: 'user', blocks: [{ type: 'text', text: 'latest' }] },
    ],
    seqs: [1, 0, 3, 5, 6, 7, 8, 9],
    checkpoints: [{ id: 'ckpt_b', fromSeq: 2, toSeq: 3 }],
    protection: { latestFromSeq: 8, userTextSeqs: [5, 9] },
  };
  const treatments = treatmentsFromDiff(diff);
  const rows = contextRows(context, treatments);

  it('labels the context as sent: system prompt, goal block, checkpoints and treated messages', () => {
    expect(rows.map((r) => [r.kind, r.seq, r.checkpoint?.id ?? null, r.treatment?.kind ?? null, r.protections])).toEqual([
      ['message', 1, null, null, ['system']],
      ['goal', 0, null, null, ['goal']],
      ['checkpoint', 3, 'ckpt_b', null, []],
      ['message', 5, null, null, ['user-text']],
      ['message', 6, null, 'masked', []],
      ['message', 7, null, null, []],
      ['message', 8, null, 'offloaded', ['latest']],
      ['message', 9, null, null, ['latest', 'user-text']],
    ]);
    expect([...(sentSeqs(rows, true) ?? [])]).toEqual([1, 5, 6, 7, 8, 9]);
    expect(sentSeqs(rows, false)).toBeUndefined();
  });

  it('tells for each history message whether it was sent, treated, summarized into which checkpoint, or left out', () => {
    const history = [
      message(1, 'system', [{ type: 'text', text: 'You are an agent.' }]),
      message(2, 'user', [{ type: 'text', text: 'a' }]),
      message(3, 'assistant', [{ type: 'text', text: 'b' }]),
      message(4, 'user', [{ type: 'text', text: 'c' }]),
      message(5, 'user', [{ type: 'text', text: 'kept user text' }], { pinned: true }),
      message(6, 'tool', [{ type: 'tool_result', toolUseId: 'c', content: 'long output' }]),
      message(10, 'assistant', [{ type: 'tool_use', id: 'e', name: 'bash', input: {} }]),
      message(11, 'user', [{ type: 'text', text: 'not sent' }]),
    ];
    const out = historyRows(history, {
      treatments,
      sentSeqs: sentSeqs(rows, true),
      leftOut: [{ seq: 10, reason: 'tool_use without its result yet' }],
      protection: context.protection,
      fallback: null,
      currentCheckpoint: (id) => (id === 'ckpt_a' ? 'ckpt_b' : id),
    });
    expect(out.map((r) => [r.seq, r.status, r.protections])).toEqual([
      [1, { kind: 'verbatim' }, ['system']],
      [2, { kind: 'summarized', checkpointId: 'ckpt_b', anchor: 'checkpoint-ckpt_b' }, []],
      [3, { kind: 'summarized', checkpointId: 'ckpt_b', anchor: 'checkpoint-ckpt_b' }, []],
      [4, { kind: 'dropped' }, []],
      [5, { kind: 'verbatim' }, ['pinned', 'user-text']],
      [6, { kind: 'masked' }, []],
      [10, { kind: 'left-out', reason: 'tool_use without its result yet' }, ['latest']],
      [11, { kind: 'not-sent', reason: 'not in the context' }, ['latest']],
    ]);
    expect(out[0]).toMatchObject({ anchor: 'message-1', tokensText: '10 tokens' });
  });
});

describe('historyWindow', () => {
  it('opens on the latest messages and pages by seq', () => {
    expect(historyWindow(undefined, 120, 50)).toEqual({ after: 70, from: 71, to: 120, total: 120, olderAfter: 20, newerAfter: null, firstAfter: 0, latestAfter: null });
    expect(historyWindow('20', 120, 50)).toEqual({ after: 20, from: 21, to: 70, total: 120, olderAfter: 0, newerAfter: 70, firstAfter: 0, latestAfter: 70 });
    expect(historyWindow('0', 120, 50)).toMatchObject({ from: 1, to: 50, olderAfter: null, firstAfter: null, newerAfter: 50 });
  });

  it('clamps what the URL asks for and handles an empty history', () => {
    expect(historyWindow('99999', 120, 50).after).toBe(70);
    expect(historyWindow('-3', 120, 50).after).toBe(70);
    expect(historyWindow(undefined, 0, 50)).toMatchObject({ after: 0, from: 0, to: 0, olderAfter: null, newerAfter: null });
    expect(historyAfterFor(60, 120, 50)).toBe(57);
    expect(historyAfterFor(2, 120, 50)).toBe(0);
    expect(historyAfterFor(119, 120, 50)).toBe(70);
  });
});

describe('blockViews line endings', () => {
  it('normalizes CR LF as the HTML parser would, so server and browser render the same text', () => {
    expect(blockViews([{ type: 'tool_result', toolUseId: 'x', content: '\r\ndiff --git a b\r\nindex 1\r' }])[0].body).toBe('\ndiff --git a b\nindex 1\n');
  });
});
