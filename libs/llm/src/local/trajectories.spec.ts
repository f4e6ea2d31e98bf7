/**
 * The local summarizer on real agent sessions (testdata/swe-agent-trajectories, see its README):
 * what an agent needs to continue — the files it changed, the errors it hit, the commands it
 * ran and the latest values it saw — survives, within the size asked for.
 */
import { BALANCED_INSTRUCTIONS, type CanonicalMessage, parseOpenAIMessages, renderTranscript, type SummarizeRequest } from '@compactor/compaction';
import { countTextSync } from '@compactor/tokens';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalSummarizer } from './local-summarizer';

const TRAJ_DIR = join(__dirname, '../../../../testdata/swe-agent-trajectories');
const tokens = (text: string) => countTextSync(text, 'o200k_base');

function load(file: string): CanonicalMessage[] {
  const history = (JSON.parse(readFileSync(join(TRAJ_DIR, file), 'utf8')) as { history: unknown[] }).history;
  const parsed = parseOpenAIMessages(history, 'history');
  if (!parsed.ok) throw new Error(`${file}: ${JSON.stringify(parsed.errors)}`);
  // The stages never summarize the system prompt.
  return parsed.value.filter((m) => m.role !== 'system');
}

/** What must survive in each session's summary: checked by hand against the trajectories. */
const EXPECTED: Record<string, { keep: string[]; stale?: string[] }> = {
  'function_calling_simple.traj': { keep: ['missing_colon.py', 'SyntaxError', '→ 8.2'] },
  // The fix changed the printed value from 344 to 345: only the latest counts.
  'marshmallow-1867__function_calling.traj': { keep: ['fields.py (', 'reproduce.py (', 'IndentationError', 'python reproduce.py → 345', 'TimeDelta'], stale: ['→ 344'] },
  'marshmallow-1867__function_calling_replace_from_source.traj': { keep: ['fields.py (', 'reproduce.py (', 'python reproduce.py → 345', 'pip install'], stale: ['→ 344'] },
  'pydicom-1458__gpt4.traj': {
    keep: ['numpy_handler.py (', 'reproduce_bug.py (', 'AttributeError', 'PixelRepresentation', 'SyntaxError', 'Result: True'],
  },
  'ctf_web_i_got_id.traj': { keep: ['printenv.pl', 'FLAG{p3rl_6_iz_EVEN_BETTER!!1}', 'web.chal.csaw.io'] },
};

const sessions = Object.keys(EXPECTED).map((file) => [file, load(file)] as const);
const summarizer = new LocalSummarizer();
const summarize = (messages: CanonicalMessage[], targetTokens: number, extra: Partial<SummarizeRequest> = {}) =>
  summarizer.summarize({ kind: 'checkpoint', instructions: BALANCED_INSTRUCTIONS, messages, targetTokens, ...extra });

describe('local summarizer on SWE-agent trajectories', () => {
  it('loads the five sessions', () => {
    expect(sessions).toHaveLength(5);
    for (const [, messages] of sessions) expect(messages.length).toBeGreaterThanOrEqual(10);
  });

  it.each(sessions)('%s: keeps edited files, errors, commands and the latest values at 600 tokens', async (file, messages) => {
    const r = await summarize(messages, 600);
    expect(tokens(r.text)).toBeLessThanOrEqual(750);
    for (const s of EXPECTED[file].keep) expect({ file, kept: s, found: r.text.includes(s) }).toEqual({ file, kept: s, found: true });
    for (const s of EXPECTED[file].stale ?? []) expect({ file, stale: s, found: r.text.includes(s) }).toEqual({ file, stale: s, found: false });
  });

  it.each(sessions)('%s: every strong error line of a tool result that a budget of 2,000 tokens can hold survives', async (_file, messages) => {
    const r = await summarize(messages, 2_000);
    expect(tokens(r.text)).toBeLessThanOrEqual(2_500);
    // Exception lines ("SomethingError: message") from the outputs, independently of the summarizer's rules.
    const errors = new Set<string>();
    for (const m of messages)
      for (const b of m.blocks) {
        const text = b.type === 'tool_result' ? (typeof b.content === 'string' ? b.content : '') : m.role === 'user' && b.type === 'text' ? b.text : '';
        for (const line of text.split('\n')) if (/^\s*(?:- )?(?:E\d{3} )?[A-Z]\w*(?:Error|Exception): \S/.test(line)) errors.add(line.trim().replace(/^- /, '').slice(0, 60));
      }
    for (const e of errors) expect({ error: e, found: r.text.includes(e) }).toEqual({ error: e, found: true });
  });

  it.each(sessions)('%s: stays within 1.25 × target for every kind and size, and is deterministic', async (_file, messages) => {
    const half = Math.floor(messages.length / 2);
    for (const target of [20, 150, 400, 1_500]) {
      for (const kind of ['checkpoint', 'chunk'] as const) {
        for (const span of [messages, messages.slice(0, half), messages.slice(half)]) {
          const r = await summarize(span, target, { kind });
          expect(tokens(r.text)).toBeLessThanOrEqual(Math.floor(target * 1.25));
          expect(tokens(r.text)).toBeLessThanOrEqual(tokens(renderTranscript(span)));
          expect(r.text.trim().length).toBeGreaterThan(0);
        }
      }
      const first = await summarize(messages.slice(0, half), target, { kind: 'chunk' });
      const second = await summarize(messages.slice(half), target, { kind: 'chunk' });
      const merged = await summarizer.summarize({
        kind: 'merge',
        instructions: BALANCED_INSTRUCTIONS,
        messages: [first.text, second.text].map((text): CanonicalMessage => ({ role: 'user', blocks: [{ type: 'text', text }] })),
        targetTokens: target,
      });
      expect(tokens(merged.text)).toBeLessThanOrEqual(Math.floor(target * 1.25));
      const again = await summarize(messages, target);
      expect((await summarize(messages, target)).text).toBe(again.text);
    }
  });

  it.each(sessions)('%s: chunk summaries merged keep the latest command outcomes', async (file, messages) => {
    const half = Math.floor(messages.length / 2);
    const parts = await Promise.all([summarize(messages.slice(0, half), 500, { kind: 'chunk' }), summarize(messages.slice(half), 500, { kind: 'chunk' })]);
    const merged = await summarizer.summarize({
      kind: 'merge',
      instructions: BALANCED_INSTRUCTIONS,
      messages: parts.map((p, i): CanonicalMessage => ({ role: 'system', tags: ['checkpoint'], blocks: [{ type: 'text', text: `[CHECKPOINT ckpt_${i} · messages ${i}]\n${p.text}` }] })),
      targetTokens: 400,
    });
    expect(tokens(merged.text)).toBeLessThanOrEqual(500);
    for (const s of EXPECTED[file].stale ?? []) expect(merged.text).not.toContain(s);
  });

  it('the task statement over the demonstration before it: its title leads, and its reproduction and the edit that pastes it keep their identifiers', async () => {
    const [, messages] = sessions.find(([f]) => f.startsWith('pydicom')) ?? sessions[0];
    // The demonstration (a worked marshmallow example that repeats the standing instructions), the pydicom issue, and the agent's first steps.
    const start = messages.findIndex((m) => m.blocks.some((b) => b.type === 'text' && b.text.includes('Pixel Representation attribute should be optional')));
    expect(start).toBeGreaterThan(0);
    const r = await summarize(messages.slice(0, start + 5), 400);
    expect(r.text).toContain('- Pixel Representation attribute should be optional for pixel data handler');
    for (const id of ['FileMetaDataset', 'ds.file_meta', 'from pydicom.dataset import']) expect({ id, found: r.text.includes(id) }).toEqual({ id, found: true });
  });

  it('writes the eight sections of seed 003 for a real session', async () => {
    const prompt = ['Technical Context', 'Project Overview', 'Code Changes', 'Debugging & Issues', 'Current Status', 'Pending Tasks', 'User Preferences', 'Key Decisions']
      .map((h) => `## ${h}\nDescribe it.`)
      .join('\n\n');
    const [, messages] = sessions.find(([f]) => f.startsWith('pydicom')) ?? sessions[0];
    const r = await summarize(messages, 800, { instructions: `Please provide a comprehensive summary structured as follows:\n\n${prompt}` });
    expect(r.text.split('\n').filter((l) => l.startsWith('## '))).toHaveLength(8);
    const section = (name: string) => r.text.split(`## ${name}\n`)[1].split('\n## ')[0];
    expect(section('Code Changes')).toContain('numpy_handler.py');
    expect(section('Debugging & Issues')).toContain('AttributeError');
  });

  it('condenses a real tool output (a traceback) to its target', async () => {
    const [, messages] = sessions.find(([f]) => f.startsWith('pydicom')) ?? sessions[0];
    const output = messages.find((m) => m.blocks.some((b) => b.type === 'text' && b.text.includes('Traceback')));
    expect(output).toBeDefined();
    const r = await summarizer.summarize({ kind: 'tool-result', instructions: 'Compress this tool output to about 10%.', messages: [output as CanonicalMessage], targetTokens: 80 });
    expect(tokens(r.text)).toBeLessThanOrEqual(100);
    expect(r.text).toContain('AttributeError: Unable to convert the pixel data');
    expect(r.text).toContain('Traceback (most recent call last):');
  });
});
