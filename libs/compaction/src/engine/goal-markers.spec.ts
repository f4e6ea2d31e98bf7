import fc from 'fast-check';
import { CanonicalMessage } from '../messages/canonical';
import {
  applyGoalMarkers,
  EMPTY_GOAL_RECORD,
  extractGoalMarkers,
  GoalMarker,
  goalMarkersOfMessages,
  GoalRecord,
  goalRecordOf,
  renderGoalBlock,
  unlockDecision,
  taskStatement,
} from './goal-markers';

/** Seed 004's "Goal Markers" example, verbatim. */
const SEED_EXAMPLE = `[GOAL] Implement user authentication system
[CHECKPOINT] Design authentication flow - COMPLETED
[CHECKPOINT] Implement login endpoint - COMPLETED
[CHECKPOINT] Add JWT token generation - IN PROGRESS
[DECISION] Use JWT for authentication - LOCKED
[DECISION] Store tokens in httpOnly cookies - LOCKED
[ARTIFACT] Created src/auth/login.ts
[ARTIFACT] Created src/auth/jwt.ts
[ARTIFACT] Modified src/routes/api.ts
[NEXT] Complete JWT token generation, then move to user registration`;

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

const fromText = (text: string, base: GoalRecord = EMPTY_GOAL_RECORD) => applyGoalMarkers(base, extractGoalMarkers(text));

describe('goal markers (seed 004 "Goal Markers", SPEC.md checkpoint-aging)', () => {
  it('seed 004: the example marker block becomes the goal record (goal, checkpoint states, locked decisions, artifacts, next step)', () => {
    expect(fromText(SEED_EXAMPLE)).toEqual({
      goal: 'Implement user authentication system',
      checkpoints: [
        { text: 'Design authentication flow', status: 'completed' },
        { text: 'Implement login endpoint', status: 'completed' },
        { text: 'Add JWT token generation', status: 'in-progress' },
      ],
      decisions: [
        { text: 'Use JWT for authentication', locked: true },
        { text: 'Store tokens in httpOnly cookies', locked: true },
      ],
      artifacts: [
        { text: 'Created src/auth/login.ts', action: 'created', path: 'src/auth/login.ts' },
        { text: 'Created src/auth/jwt.ts', action: 'created', path: 'src/auth/jwt.ts' },
        { text: 'Modified src/routes/api.ts', action: 'modified', path: 'src/routes/api.ts' },
      ],
      nextStep: 'Complete JWT token generation, then move to user registration',
    });
  });

  it('seed 004: pending checkpoints (no state, or - PENDING) and decisions that are not locked', () => {
    const markers = extractGoalMarkers('[CHECKPOINT] Add user registration\n[CHECKPOINT] Add password reset - PENDING\n[DECISION] Try bcrypt for hashing');
    expect(markers).toEqual([
      { kind: 'checkpoint', text: 'Add user registration', status: 'pending' },
      { kind: 'checkpoint', text: 'Add password reset', status: 'pending' },
      { kind: 'decision', text: 'Try bcrypt for hashing', locked: false },
    ]);
  });

  it('SPEC: markers inside fenced code blocks, indented code, inline code, > quotes and quoted strings are not markers', () => {
    const text = [
      'Here is how the markers look:',
      '```',
      '[GOAL] fenced goal',
      '```',
      '~~~~md',
      '[DECISION] tilde-fenced - LOCKED',
      '```',
      '[NEXT] still inside the ~~~~ fence (a ``` line does not close it)',
      '~~~~',
      '    [GOAL] indented code goal',
      '> [DECISION] quoted decision - LOCKED',
      '`[GOAL] inline code goal`',
      '"[GOAL] a quoted string"',
      "'[NEXT] single-quoted'",
      'Write "[DECISION] X - LOCKED" to lock a decision, or `[GOAL] y` to set one.',
      '[ARTIFACT] Created src/real.ts',
    ].join('\n');
    expect(extractGoalMarkers(text)).toEqual([{ kind: 'artifact', text: 'Created src/real.ts', action: 'created', path: 'src/real.ts' }]);
  });

  it('SPEC: a marker counts at the start of a line or a list item; a fence left open hides the rest of the text', () => {
    expect(extractGoalMarkers('- [GOAL] bullet goal\n  2. [NEXT] numbered next\n   [ARTIFACT] Modified `src/a.ts`')).toEqual([
      { kind: 'goal', text: 'bullet goal' },
      { kind: 'next', text: 'numbered next' },
      { kind: 'artifact', text: 'Modified `src/a.ts`', action: 'modified', path: 'src/a.ts' },
    ]);
    expect(extractGoalMarkers('Progress: [GOAL] not at line start')).toEqual([]);
    expect(extractGoalMarkers('[GOAL]')).toEqual([]);
    expect(extractGoalMarkers('[goal] lower-case tags are not the seed format')).toEqual([]);
    expect(extractGoalMarkers('```ts\n[GOAL] never closed')).toEqual([]);
  });

  it('seed 004: markers are read from assistant text only (not user text, tool results or thinking)', () => {
    const messages: CanonicalMessage[] = [
      { role: 'user', blocks: [{ type: 'text', text: '[GOAL] the user typed a marker' }] },
      {
        role: 'assistant',
        blocks: [
          { type: 'thinking', thinking: '[GOAL] a thought', signature: 'sig' },
          { type: 'text', text: '[GOAL] the assistant goal' },
          { type: 'tool_use', id: 't1', name: 'bash', input: { command: 'echo "[NEXT] x"' } },
        ],
      },
      { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 't1', content: '[NEXT] tool output', isError: false }] },
    ];
    expect(goalMarkersOfMessages(messages)).toEqual([{ kind: 'goal', text: 'the assistant goal' }]);
    expect(goalRecordOf(messages).goal).toBe('the assistant goal');
  });

  it('seed 004: a later [GOAL] replaces the goal, a later [NEXT] the next step; checkpoints take their latest state', () => {
    const first = fromText('[GOAL] Build the login page\n[CHECKPOINT] Form layout - IN PROGRESS\n[NEXT] style the form');
    const second = fromText('[GOAL] Build login and signup pages\n[CHECKPOINT] form layout - COMPLETED\n[NEXT] start signup', first);
    expect(second.goal).toBe('Build login and signup pages');
    expect(second.nextStep).toBe('start signup');
    expect(second.checkpoints).toEqual([{ text: 'Form layout', status: 'completed' }]);
  });

  it('seed 004: decisions dedupe by text, a locked decision stays locked, and only an explicit goal update unlocks it', () => {
    const locked = fromText('[DECISION] Use JWT - LOCKED\n[DECISION] use  jwt\n[DECISION] Use JWT - UNLOCKED\n[DECISION] Cookies for tokens');
    expect(locked.decisions).toEqual([
      { text: 'Use JWT', locked: true },
      { text: 'Cookies for tokens', locked: false },
    ]);
    // An unlocked decision becomes locked by a later LOCKED marker.
    expect(fromText('[DECISION] Cookies for tokens - LOCKED', locked).decisions[1]).toEqual({ text: 'Cookies for tokens', locked: true });
    const unlocked = unlockDecision(deepFreeze(locked), 'use jwt');
    expect(unlocked.decisions[0]).toEqual({ text: 'Use JWT', locked: false });
    expect(locked.decisions[0].locked).toBe(true);
  });

  it('seed 004: artifacts dedupe by text; an artifact without a verb keeps its text', () => {
    const r = fromText('[ARTIFACT] Created src/a.ts\n[ARTIFACT] Created src/a.ts\n[ARTIFACT] Deleted old/b.ts\n[ARTIFACT] API docs');
    expect(r.artifacts).toEqual([
      { text: 'Created src/a.ts', action: 'created', path: 'src/a.ts' },
      { text: 'Deleted old/b.ts', action: 'deleted', path: 'old/b.ts' },
      { text: 'API docs' },
    ]);
  });

  it('SPEC "Context": the goal block holds the goal, checkpoints, locked decisions, user constraints, artifacts and next step', () => {
    const record = fromText(`${SEED_EXAMPLE}\n[DECISION] Maybe add OAuth later`, { ...EMPTY_GOAL_RECORD, constraints: ['Never edit the migrations'] });
    expect(renderGoalBlock(record)).toBe(
      [
        'ACTIVE GOAL: Implement user authentication system',
        '',
        'CHECKPOINTS:',
        '✅ Design authentication flow',
        '✅ Implement login endpoint',
        '🔄 Add JWT token generation',
        '',
        'LOCKED DECISIONS:',
        '🔒 Use JWT for authentication',
        '🔒 Store tokens in httpOnly cookies',
        '',
        'USER CONSTRAINTS:',
        '- Never edit the migrations',
        '',
        'ARTIFACTS:',
        '- Created src/auth/login.ts',
        '- Created src/auth/jwt.ts',
        '- Modified src/routes/api.ts',
        '',
        'NEXT: Complete JWT token generation, then move to user registration',
      ].join('\n'),
    );
    expect(renderGoalBlock({ ...record, priority: 'high', status: 'active' })).toMatch(/^ACTIVE GOAL: .*\nPriority: high\nStatus: active\n/);
    expect(renderGoalBlock(EMPTY_GOAL_RECORD)).toBe('');
  });

  const markerArb: fc.Arbitrary<GoalMarker> = fc.oneof(
    fc.record({ kind: fc.constant('goal' as const), text: fc.constantFrom('Ship v1', 'Fix the bug', 'Port to Rust') }),
    fc.record({ kind: fc.constant('next' as const), text: fc.constantFrom('write tests', 'deploy') }),
    fc.record({ kind: fc.constant('checkpoint' as const), text: fc.constantFrom('Design', 'design', 'Build', 'Test'), status: fc.constantFrom('completed' as const, 'in-progress' as const, 'pending' as const) }),
    fc.record({ kind: fc.constant('decision' as const), text: fc.constantFrom('Use JWT', 'use jwt', 'Use Postgres', 'Use Redis'), locked: fc.boolean() }),
    fc.record({ kind: fc.constant('artifact' as const), text: fc.constantFrom('Created a.ts', 'Modified b.ts', 'notes') }),
  );

  it('properties: applying markers is pure, deterministic, batch-independent, and never unlocks a locked decision', () => {
    fc.assert(
      fc.property(fc.array(markerArb, { maxLength: 12 }), fc.array(markerArb, { maxLength: 12 }), (a, b) => {
        const base = deepFreeze(applyGoalMarkers(EMPTY_GOAL_RECORD, a));
        const snapshot = JSON.stringify(base);
        const once = applyGoalMarkers(EMPTY_GOAL_RECORD, [...a, ...b]);
        const twice = applyGoalMarkers(base, deepFreeze([...b]));
        expect(twice).toEqual(once);
        expect(JSON.stringify(base)).toBe(snapshot);
        for (const d of base.decisions) if (d.locked) expect(twice.decisions.find((x) => x.text === d.text)?.locked).toBe(true);
        // Decisions and checkpoints are unique by text.
        const keys = twice.decisions.map((d) => d.text.toLowerCase());
        expect(new Set(keys).size).toBe(keys.length);
      }),
      { numRuns: 200, seed: 4004 },
    );
  });

  it('properties: a marker line is found as such, and never when it is fenced, quoted or in inline code', () => {
    const line = fc.tuple(fc.constantFrom('GOAL', 'NEXT', 'ARTIFACT', 'DECISION', 'CHECKPOINT'), fc.stringMatching(/^[A-Za-z][A-Za-z0-9 /._-]{0,30}[A-Za-z0-9]$/)).map(([tag, body]) => `[${tag}] ${body}`);
    fc.assert(
      fc.property(line, fc.constantFrom('```', '~~~', '````'), (marker, fence) => {
        expect(extractGoalMarkers(`intro\n${marker}\noutro`)).toHaveLength(1);
        expect(extractGoalMarkers(`intro\n${fence}\n${marker}\n${fence}\noutro`)).toEqual([]);
        expect(extractGoalMarkers(`> ${marker}`)).toEqual([]);
        expect(extractGoalMarkers(`\`${marker}\``)).toEqual([]);
        expect(extractGoalMarkers(`"${marker}"`)).toEqual([]);
        expect(extractGoalMarkers(`See ${marker}`)).toEqual([]);
      }),
      { numRuns: 200, seed: 4005 },
    );
  });
});

describe('taskStatement (the goal block task section when no goal is set)', () => {
  const words = (t: string) => t.split(/\s+/).filter(Boolean).length;
  const msgs = [
    { seq: 1, message: { role: 'system' as const, blocks: [{ type: 'text' as const, text: 'You are an agent.' }] } },
    { seq: 2, message: { role: 'user' as const, blocks: [{ type: 'text' as const, text: 'Fix the flaky upload test.\nIt fails on CI about once a day with a timeout in tests/test_upload.py.\nDo not touch the retry settings.' }] } },
    { seq: 3, message: { role: 'assistant' as const, blocks: [{ type: 'text' as const, text: 'Looking.' }] } },
  ];
  it('is the first user request whole when it fits, with its seq', () => {
    expect(taskStatement(msgs, 100, words)).toEqual({ seq: 2, text: msgs[1].message.blocks[0].text });
  });
  it('keeps the opening lines, then words, within the limit, and says it was cut', () => {
    const cut = taskStatement(msgs, 12, words);
    expect(cut?.text).toBe('Fix the flaky upload test.\nIt fails on CI about once …');
    expect(words(cut?.text ?? '')).toBeLessThanOrEqual(12);
    expect(taskStatement(msgs, 9, words)).toBeUndefined();
  });
  it('is the request the first reply answers: the last user text before it, not material sent ahead (SWE-agent demonstration)', () => {
    // The shape of testdata/swe-agent-trajectories (pydicom-1458__gpt4): a demonstration, then the issue, then the agent's first reply.
    const user = (seq: number, text: string) => ({ seq, message: { role: 'user' as const, blocks: [{ type: 'text' as const, text }] } });
    const demo = user(2, 'Here is a demonstration of how to correctly accomplish this task.\nIt is included to show you how to correctly use the interface.');
    const issue = user(3, "We're currently solving the following issue within our repository. Here's the issue text:\nISSUE:\nError: Pixel Representation is missing");
    const reply = { seq: 4, message: { role: 'assistant' as const, blocks: [{ type: 'text' as const, text: 'First I will reproduce it.' }] } };
    const later = user(5, 'Now also update the changelog.');
    expect(taskStatement([msgs[0], demo, issue, reply, later], 100, words)).toEqual({ seq: 3, text: issue.message.blocks[0].text });
    // No reply yet: the first user text.
    expect(taskStatement([msgs[0], demo, issue], 100, words)?.seq).toBe(2);
    // Tool results are never the request.
    const toolResult = { seq: 3, message: { role: 'user' as const, blocks: [{ type: 'tool_result' as const, toolUseId: 't1', content: [{ type: 'text' as const, text: 'ok' }], isError: false }] } };
    expect(taskStatement([msgs[0], demo, toolResult, reply], 100, words)?.seq).toBe(2);
  });
});
