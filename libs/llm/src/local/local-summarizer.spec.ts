import { BALANCED_INSTRUCTIONS, type CanonicalMessage, LlmError, renderTranscript, type SummarizeRequest } from '@compactor/compaction';
import { countTextSync } from '@compactor/tokens';
import fc from 'fast-check';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LOCAL_DEFAULT_CONTEXT_WINDOW, LocalSummarizer } from './local-summarizer';

const tokens = (text: string) => countTextSync(text, 'o200k_base');
const user = (text: string): CanonicalMessage => ({ role: 'user', blocks: [{ type: 'text', text }] });
const assistant = (text: string): CanonicalMessage => ({ role: 'assistant', blocks: [{ type: 'text', text }] });
const request = (messages: CanonicalMessage[], targetTokens: number, extra: Partial<SummarizeRequest> = {}): SummarizeRequest => ({
  kind: 'checkpoint',
  instructions: BALANCED_INSTRUCTIONS,
  messages,
  targetTokens,
  ...extra,
});

/** The eight-section prompt of seed 003, as the offload-compact preset sends it. */
const SEED_003_PROMPT = [
  'Please provide a comprehensive summary of our conversation structured as follows:',
  '',
  '## Technical Context',
  'Development environment, tools, frameworks, and configurations in use.',
  '',
  '## Project Overview',
  'Main project goals, features, and scope. Key components and their relationships.',
  '',
  '## Code Changes',
  'Files created, modified, or analyzed. Specific implementations added.',
  '',
  '## Debugging & Issues',
  'Problems encountered, root causes, and solutions implemented.',
  '',
  '## Current Status',
  'What was just completed. Current state of the codebase.',
  '',
  '## Pending Tasks',
  'Immediate next steps and priorities. Known issues needing attention.',
  '',
  '## User Preferences',
  'Coding style, formatting, and workflow preferences observed.',
  '',
  '## Key Decisions',
  'Important technical decisions made and their rationale.',
  '',
  'Focus on information essential for continuing effectively. Target length: approximately 8000 tokens.',
].join('\n');
const SEED_003_HEADINGS = ['Technical Context', 'Project Overview', 'Code Changes', 'Debugging & Issues', 'Current Status', 'Pending Tasks', 'User Preferences', 'Key Decisions'];

/** A long, chatty session with a few facts that matter buried in it. */
function chattySession(): CanonicalMessage[] {
  const messages: CanonicalMessage[] = [
    user('We are building the billing service. You must never log card numbers, and do not change the public API of src/billing/charge.ts.'),
    assistant('Sure! Happy to help with that.'),
  ];
  for (let i = 0; i < 30; i++) {
    messages.push(user(`Thanks, that looks nice. Round ${i} went well, I think.`));
    messages.push(assistant(`Great, glad to hear it. Let me know what else you would like to look at in round ${i}.`));
  }
  messages.push(user('We decided to use Postgres instead of MySQL for the ledger tables.'));
  messages.push(assistant('Okay, sounds good!'));
  for (let i = 0; i < 10; i++) messages.push(assistant(`Alright, that is a nice idea, thank you for sharing it (${i}).`));
  return messages;
}

describe('LocalSummarizer', () => {
  const summarizer = new LocalSummarizer();

  it('identifies itself as the offline, deterministic local provider', () => {
    expect(summarizer.provider).toBe('local');
    expect(summarizer.model).toBe('extractive-v1');
    expect(summarizer.deterministic).toBe(true);
    expect(summarizer.contextWindow).toBe(LOCAL_DEFAULT_CONTEXT_WINDOW);
    expect(new LocalSummarizer({ contextWindow: 32_000 }).contextWindow).toBe(32_000);
  });

  it('reports usage: counted tokens, no cost, one attempt', async () => {
    const messages = chattySession();
    const r = await summarizer.summarize(request(messages, 80));
    expect(r.provider).toBe('local');
    expect(r.model).toBe('extractive-v1');
    expect(r.attempts).toBe(1);
    expect(r.usage.costUsd).toBe(0);
    expect(r.usage.outputTokens).toBe(tokens(r.text));
    expect(r.usage.inputTokens).toBe(tokens(renderTranscript(messages)) + tokens(BALANCED_INSTRUCTIONS));
  });

  it('keeps constraint and decision sentences over chatter', async () => {
    const r = await summarizer.summarize(request(chattySession(), 90));
    expect(r.text).toContain('must never log card numbers');
    expect(r.text).toContain('src/billing/charge.ts');
    expect(r.text).toContain('Postgres instead of MySQL');
    expect(r.text).not.toMatch(/glad to hear it|sounds good|Happy to help/i);
    expect(tokens(r.text)).toBeLessThanOrEqual(Math.floor(90 * 1.25));
  });

  it('ranks stated choices and open items above commands whose output is not known any more', async () => {
    // An agent that read and grepped a lot (outputs masked by an earlier step), decided once, and left one thing open.
    const messages: CanonicalMessage[] = [user('Speed up the report export.')];
    for (let i = 0; i < 40; i++) {
      messages.push({ role: 'assistant', blocks: [{ type: 'tool_use', id: `r${i}`, name: 'Read', input: { file_path: `/repo/src/reports/part_${i}.ts` } }] });
      messages.push({
        role: 'user',
        blocks: [{ type: 'tool_result', toolUseId: `r${i}`, content: `[masked tool output: Read, 80 lines, ~900 tokens; the full output is in the session history at seq ${i}]`, isError: false }],
      });
      if (i === 12) messages.push(assistant('We will go with a streaming CSV writer instead of the in-memory buffer, so memory stays flat.'));
      if (i === 20) messages.push(assistant('The slow export suite on staging still has to be rerun.'));
    }
    const r = await summarizer.summarize(request(messages, 200));
    expect(r.text).toContain('streaming CSV writer');
    expect(r.text).toContain('slow export suite on staging still has to be rerun');
    // The reads are recorded once each in the file list; "Read … → output not kept" lines would only repeat them (the latest action may stay: it says where things stand).
    expect(r.text.match(/output not kept/g)?.length ?? 0).toBeLessThanOrEqual(1);
  });

  it('keeps the latest value when a fact changes ("X is set to 5" then "X is set to 7")', async () => {
    const messages = [
      user('Please make the importer robust; it must not drop rows.'),
      assistant('The batch size is set to 500 rows for the importer.'),
      assistant('I looked at the retry logic; it seems fine for now.'),
      assistant('MAX_RETRIES=3 in config/importer.env'),
      user('That batch is too large for the staging database.'),
      assistant('Done: the batch size is now set to 200 rows.'),
      assistant('Also updated MAX_RETRIES=5 in config/importer.env'),
      ...Array.from({ length: 8 }, (_, i) => assistant(`Checked shard ${i} and it imported cleanly without errors.`)),
    ];
    const r = await summarizer.summarize(request(messages, 110));
    expect(r.text).toContain('200 rows');
    expect(r.text).not.toContain('500 rows');
    expect(r.text).toContain('MAX_RETRIES=5');
    expect(r.text).not.toContain('MAX_RETRIES=3');
  });

  it('writes the eight sections of seed 003, in order, when the instructions list them', async () => {
    const r = await summarizer.summarize(request(chattySession(), 300, { instructions: SEED_003_PROMPT }));
    const headings = r.text.split('\n').filter((l) => l.startsWith('## ')).map((l) => l.slice(3));
    expect(headings).toEqual(SEED_003_HEADINGS);
    // Items land in their sections: the user's rules under preferences, the decision under decisions.
    const section = (name: string) => r.text.split(`## ${name}\n`)[1].split('\n## ')[0];
    expect(section('Key Decisions')).toContain('Postgres instead of MySQL');
    expect(section('User Preferences')).toContain('never log card numbers');
  });

  it('detects other heading lists generically: numbered, bulleted and bold title-case headings', async () => {
    const numbered = 'Summarize with these parts:\n1. Goal\n2. Files Touched\n3. Open Questions\n4. Next Steps';
    const bold = 'Use these sections:\n- **Summary**: what happened\n- **Decisions Made**: and why\n- **Remaining Work**: next';
    for (const [instructions, expected] of [
      [numbered, ['Goal', 'Files Touched', 'Open Questions', 'Next Steps']],
      [bold, ['Summary', 'Decisions Made', 'Remaining Work']],
    ] as const) {
      const r = await summarizer.summarize(request(chattySession(), 200, { instructions }));
      expect(r.text.split('\n').filter((l) => l.startsWith('## ')).map((l) => l.slice(3))).toEqual(expected);
    }
  });

  it('uses the compact grouped format when the instructions ask for no sections', async () => {
    const r = await summarizer.summarize(request(chattySession(), 150));
    expect(r.text).not.toContain('## ');
    expect(r.text.split('\n')[0]).toBe('Goal/constraints:');
    expect(r.text).toContain('Decisions:');
  });

  it('starts with [SUMMARY] when the instructions ask for it (seed 000)', async () => {
    const instructions = 'Summarize the conversation, preserving key decisions, unresolved issues and current task state. Reply as "[SUMMARY]: <summary>". Be concise.';
    const r = await summarizer.summarize(request(chattySession(), 120, { instructions }));
    expect(r.text.startsWith('[SUMMARY]')).toBe(true);
    expect(tokens(r.text)).toBeLessThanOrEqual(150);
  });

  it('returns a normalized copy, never longer, when the input already fits the target', async () => {
    const messages = [user('Use   pnpm, not npm.   \r\n\r\n\r\n\r\nThe port is 8080.  ')];
    const r = await summarizer.summarize(request(messages, 500));
    expect(r.text).toBe('USER: Use   pnpm, not npm.\n\nThe port is 8080.');
    expect(tokens(r.text)).toBeLessThanOrEqual(tokens(renderTranscript(messages)));
  });

  it('is deterministic: same request, same text, across instances', async () => {
    const req = request(chattySession(), 120, { goal: 'billing ledger on Postgres' });
    const a = await summarizer.summarize(req);
    const b = await new LocalSummarizer().summarize(structuredClone(req));
    expect(b.text).toBe(a.text);
  });

  it('never reads a clock or a random source (Guarantee 8)', () => {
    for (const file of readdirSync(__dirname).filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts'))) {
      const source = readFileSync(join(__dirname, file), 'utf8');
      expect({ file, clock: /\bDate\b|Math\.random|performance\.now|process\.hrtime|crypto/.test(source) }).toEqual({ file, clock: false });
    }
  });

  it('throws LlmError aborted when the signal is aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const call = summarizer.summarize(request(chattySession(), 100), controller.signal);
    await expect(call).rejects.toBeInstanceOf(LlmError);
    await expect(call).rejects.toMatchObject({ kind: 'aborted', attempts: 1 });
  });

  it('stops between messages when the signal is aborted mid-run', async () => {
    // A signal that turns aborted after a few reads: the run checks it between messages.
    let reads = 0;
    const signal = { get aborted() { return ++reads > 3; } } as unknown as AbortSignal;
    await expect(summarizer.summarize(request(chattySession(), 100), signal)).rejects.toMatchObject({ name: 'LlmError', kind: 'aborted' });
    expect(reads).toBeGreaterThan(3);
  });

  it('prefers what the goal is about when the goal is known (seed 004)', async () => {
    const messages = [
      assistant('Option one: the export job writes parquet files to the archive bucket nightly.'),
      assistant('Option two: the signup form validates phone numbers with libphonenumber.'),
      ...Array.from({ length: 6 }, (_, i) => assistant(`Filler remark number ${i} about nothing in particular at all.`)),
    ];
    const onExport = await summarizer.summarize(request(messages, 30, { goal: 'Ship the nightly parquet export to the archive bucket' }));
    const onSignup = await summarizer.summarize(request(messages, 30, { goal: 'Validate phone numbers in the signup form' }));
    expect(onExport.text).toContain('parquet');
    expect(onSignup.text).toContain('libphonenumber');
  });

  describe('tool-result', () => {
    const lines = [
      '$ npm test',
      '> billing@1.0.0 test',
      ...Array.from({ length: 300 }, (_, i) => `  ✓ computes invoice line ${i} (${i % 7} ms)`),
      '  ✕ rejects expired cards (12 ms)',
      '    TypeError: Cannot read properties of undefined (reading "expiry")',
      '      at validateCard (src/billing/cards.ts:42:17)',
      ...Array.from({ length: 200 }, (_, i) => `  ✓ formats currency case ${i} (1 ms)`),
      'Tests: 1 failed, 500 passed, 501 total',
      'Time: 4.2 s',
    ];
    const output = lines.join('\n');

    it('keeps the errors, paths, summary lines, head and tail, in order, within the target', async () => {
      const r = await summarizer.summarize({ kind: 'tool-result', instructions: 'Compress this tool output.', messages: [user(output)], targetTokens: 120 });
      expect(tokens(r.text)).toBeLessThanOrEqual(150);
      expect(r.text).toContain('TypeError: Cannot read properties of undefined');
      expect(r.text).toContain('src/billing/cards.ts:42:17');
      expect(r.text).toContain('Tests: 1 failed, 500 passed, 501 total');
      expect(r.text).toContain('$ npm test');
      // 300 passing tests fold into their last line and a count.
      expect(r.text).toContain('[×300]');
      const at = (s: string) => r.text.indexOf(s);
      expect(at('$ npm test')).toBeLessThan(at('TypeError'));
      expect(at('TypeError')).toBeLessThan(at('Tests: 1 failed'));
    });

    it('reads tool_result blocks too, and marks an error result', async () => {
      const messages: CanonicalMessage[] = [
        { role: 'assistant', blocks: [{ type: 'tool_use', id: 't1', name: 'bash', input: { command: 'npm test' } }] },
        { role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 't1', content: output, isError: true }] },
      ];
      const r = await summarizer.summarize({ kind: 'tool-result', instructions: '', messages, targetTokens: 100 });
      expect(r.text).toContain('TypeError');
      expect(tokens(r.text)).toBeLessThanOrEqual(125);
    });
  });

  describe('merge', () => {
    const checkpoint = (text: string): CanonicalMessage => ({ role: 'system', tags: ['checkpoint'], blocks: [{ type: 'text', text }] });
    const older = [
      '[CHECKPOINT ckpt_1 · messages 1–40]',
      'Goal/constraints:',
      '- Never push directly to main; every change goes through a pull request.',
      'Decisions:',
      '- We chose SQLite instead of Postgres for the local cache.',
      'Files:',
      '- src/cache/store.ts (create, edit)',
      'State/values:',
      '- The cache TTL is set to 30 minutes.',
      ...Array.from({ length: 25 }, (_, i) => `- Explored module ${i} of the legacy code; nothing notable there.`),
    ].join('\n');
    const newer = [
      '[CHECKPOINT ckpt_2 · messages 41–90]',
      'Files:',
      '- src/cache/store.ts (test)',
      '- src/cache/evict.ts (create)',
      'State/values:',
      '- The cache TTL is set to 10 minutes.',
      ...Array.from({ length: 25 }, (_, i) => `- Read test fixture ${i}; it matches the schema.`),
      'Open tasks:',
      '- Add eviction metrics to the dashboard.',
    ].join('\n');

    it('keeps constraints and decisions first, the latest values, and merges file records', async () => {
      const r = await summarizer.summarize({ kind: 'merge', instructions: BALANCED_INSTRUCTIONS, messages: [checkpoint(older), checkpoint(newer)], targetTokens: 90 });
      expect(tokens(r.text)).toBeLessThanOrEqual(112);
      expect(r.text).toContain('Never push directly to main');
      expect(r.text).toContain('SQLite instead of Postgres');
      expect(r.text).toContain('10 minutes');
      expect(r.text).not.toContain('30 minutes');
      expect(r.text).toContain('src/cache/store.ts (create, edit, test)');
      expect(r.text).not.toContain('[CHECKPOINT');
      expect(r.text.indexOf('Never push')).toBeLessThan(r.text.indexOf('10 minutes'));
    });
  });

  describe('invariants (property-based)', () => {
    const word = fc.constantFrom(
      'the', 'we', 'must', 'never', 'decided', 'instead of', 'TODO:', 'next', 'Error:', 'TypeError:', 'Traceback', 'FAILED', 'exit code 2',
      'src/app/main.ts', './scripts/run.sh', 'config.yaml', 'MAX_SIZE=10', 'timeout is 30s', 'v1.2.3', '42%', '`fooBar()`', 'snake_case_id',
      'OK', '3 passed', 'é', '日本語', '🚀', '\n', '\n\n', '  ', '```', '$ npm test', '- bullet', '## Heading', '[SUMMARY]', '→', 'x'.repeat(300),
    );
    const text = fc.oneof(fc.array(word, { maxLength: 60 }).map((w) => w.join(' ')), fc.string({ maxLength: 400 }), fc.string({ unit: 'binary', maxLength: 200 }));
    const textMessage = fc
      .tuple(fc.constantFrom('user', 'assistant', 'system') as fc.Arbitrary<'user' | 'assistant' | 'system'>, text)
      .map(([role, t]): CanonicalMessage[] => [{ role, blocks: [{ type: 'text', text: t }] }]);
    const toolExchange = fc.tuple(fc.constantFrom('bash', 'edit', 'read_file'), text, text, fc.boolean()).map(([name, input, out, isError]): CanonicalMessage[] => [
      { role: 'assistant', blocks: [{ type: 'tool_use', id: 'call_1', name, input: { command: input, path: 'src/a.ts' } }] },
      { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'call_1', content: out, isError }] },
    ]);
    const message = fc.oneof(textMessage, toolExchange);
    const instructions = fc.constantFrom(BALANCED_INSTRUCTIONS, SEED_003_PROMPT, 'Reply with [SUMMARY] first.', '');
    const kind = fc.constantFrom('checkpoint', 'chunk', 'merge', 'tool-result') as fc.Arbitrary<SummarizeRequest['kind']>;

    it('never exceeds 1.25 × target or the input, is never empty, and is deterministic, for every kind', async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(message, { minLength: 1, maxLength: 12 }), kind, instructions, fc.integer({ min: 1, max: 600 }), async (groups, k, instr, target) => {
          const messages = groups.flat();
          const req: SummarizeRequest = { kind: k, instructions: instr, messages, targetTokens: target };
          const r = await summarizer.summarize(req);
          const out = tokens(r.text);
          expect(out).toBeLessThanOrEqual(Math.max(1, Math.floor(target * 1.25)));
          expect(out).toBeLessThanOrEqual(Math.max(1, tokens(renderTranscript(messages))));
          expect(r.text.length).toBeGreaterThan(0);
          expect((await summarizer.summarize(req)).text).toBe(r.text);
        }),
        { numRuns: 200 },
      );
    });
  });

  it('handles 1 MB of input quickly', async () => {
    const block = chattySession()
      .map((m) => (m.blocks[0].type === 'text' ? m.blocks[0].text : ''))
      .join('\n');
    const messages: CanonicalMessage[] = [];
    for (let i = 0; messages.reduce((n, m) => n + (m.blocks[0].type === 'text' ? m.blocks[0].text.length : 0), 0) < 1_000_000; i++) {
      messages.push(i % 2 ? assistant(`${block}\nStep ${i}: wrote src/module${i}.ts; the counter is now ${i}.`) : user(`Iteration ${i}: keep going, and do not touch src/legacy${i}.ts.\n${block}`));
    }
    const t0 = process.hrtime.bigint();
    const r = await summarizer.summarize(request(messages, 2_000));
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    expect(tokens(r.text)).toBeLessThanOrEqual(2_500);
    // Measured well under a second on an idle machine; the bound leaves room for a loaded CI runner.
    expect(ms).toBeLessThan(5_000);
  });
});
