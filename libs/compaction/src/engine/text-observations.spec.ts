import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { countTextSync } from '@compactor/tokens';
import { CanonicalMessage, TextBlock } from '../messages/canonical';
import { parseOpenAIMessages } from '../messages/openai';
import { FactsLedger } from '../ledger/ledger';
import { BALANCED_DEFAULTS } from '../presets/balanced';
import { maskObservations } from './masking';
import { protectionOf } from './protection';
import { isTextObservation } from './text-observations';
import { CountMessage, SessionMessage } from './types';

const TESTDATA = join(__dirname, '../../../../testdata');
const count: CountMessage = (m) => 3 + m.blocks.reduce((n, b) => n + (b.type === 'text' ? countTextSync(b.text, 'o200k_base') : 10), 0);

/** A SWE-agent trajectory of testdata/ as stored messages. */
function sweAgent(dir: string, file: string): SessionMessage[] {
  const parsed = parseOpenAIMessages((JSON.parse(readFileSync(join(TESTDATA, dir, file), 'utf8')) as { history: unknown[] }).history, 'history');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value.map((message, i) => ({ seq: i + 1, message, tokens: count(message) }));
}

const observations = (messages: SessionMessage[]) => messages.filter((m, i) => isTextObservation(m.message, messages[i - 1]?.message)).map((m) => m.seq);
const userTexts = (messages: SessionMessage[]) => messages.filter((m) => m.message.role === 'user').length;
const textOf = (m: SessionMessage | undefined) => (m?.message.blocks[0] as TextBlock | undefined)?.text ?? '';

describe("a command's output sent as user text (agents that act through text)", () => {
  it('is what the facts ledger reads as a tool output, in every SWE-agent trace of testdata/', () => {
    const traces: [string, string, number, number][] = [
      ['swe-agent-trajectories', 'ctf_web_i_got_id.traj', 20, 21],
      ['swe-agent-trajectories', 'pydicom-1458__gpt4.traj', 11, 13],
      ['swe-agent-extra', 'swe-agent__test-repo-i1.traj', 4, 6],
      // Function-calling agents send their outputs as tool results: none of their user messages is one.
      ['swe-agent-trajectories', 'marshmallow-1867__function_calling.traj', 0, 1],
      ['swe-agent-trajectories', 'function_calling_simple.traj', 0, 1],
    ];
    for (const [dir, file, outputs, users] of traces) {
      const messages = sweAgent(dir, file);
      const seqs = observations(messages);
      expect([file, seqs.length, userTexts(messages)]).toEqual([file, outputs, users]);
      // The same rule as the ledger's: the user messages it reads while awaiting a command's output.
      const ledger = new FactsLedger();
      const awaited: number[] = [];
      for (const m of messages) {
        if (m.message.role === 'user' && ledger.state().awaitingOutput) awaited.push(m.seq);
        ledger.addAll([m]);
      }
      expect([file, seqs]).toEqual([file, awaited]);
    }
  });

  it("is not a command's output where the agent showed a command and went on (aider 1128), nor after a tool call; a client's `observation` tag says it is", () => {
    // aider-dev-history/chat-history.md (2024-08-22 06:29): the assistant shows how to run the script, then explains; the user answers.
    const advice: CanonicalMessage = {
      role: 'assistant',
      blocks: [{ type: 'text', text: "Now you can run the script directly like this:\n\n```bash\n./testsr.py your_markdown_file.md\n```\n\nThis assumes you're in the same directory as the script." }],
    };
    const reply: CanonicalMessage = { role: 'user', blocks: [{ type: 'text', text: 'use indent=4 on all json.dump' }] };
    expect(isTextObservation(reply, advice)).toBe(false);
    const ran: CanonicalMessage = { role: 'assistant', blocks: [{ type: 'text', text: 'Let me run it.\n```\n./testsr.py your_markdown_file.md\n```' }] };
    expect(isTextObservation(reply, ran)).toBe(true);
    expect(isTextObservation(reply, { ...ran, blocks: [...ran.blocks, { type: 'tool_use', id: 'call_1', name: 'bash', input: {} }] })).toBe(false);
    expect(isTextObservation({ ...reply, tags: ['observation'] }, undefined)).toBe(true);
  });

  it("is not kept as the user's text, and masking treats it as the output it is, the last one aside (pydicom-1458__gpt4)", () => {
    const messages = sweAgent('swe-agent-trajectories', 'pydicom-1458__gpt4.traj');
    const outputs = new Set(observations(messages));
    const protection = protectionOf(messages, BALANCED_DEFAULTS.protection);
    // The latest user texts are the user's own words: the issue (its first request) and the demonstration's, never an output.
    expect([...protection.userText].filter((seq) => outputs.has(seq))).toEqual([]);
    const request = messages.find((m) => m.message.role === 'user' && textOf(m).includes('Pixel Representation attribute should be optional'));
    expect(protection.userText.has(request?.seq ?? -1)).toBe(true);

    const masked = maskObservations(messages, protection, { keepLatestTurns: 2, minTokens: 50 }, count);
    expect(masked.masked.length).toBeGreaterThan(0);
    expect(masked.masked.every((seq) => outputs.has(seq))).toBe(true);
    // The listing of numpy_handler.py that `open` printed: a placeholder under the command's name, with its keys (the file).
    const listing = messages.find((m) => outputs.has(m.seq) && textOf(m).startsWith('[File: /pydicom__pydicom/pydicom/pixel_data_handlers/numpy_handler.py (372 lines total)]'));
    const placeholder = textOf(masked.messages.find((m) => m.seq === listing?.seq));
    expect(placeholder).toMatch(/^\[masked tool output: open, \d+ lines, ~\d+ tokens; the full output is in the session history at seq \d+\]\nKeys in it: /);
    expect(placeholder.split('\n')[1]).toContain('/pydicom__pydicom/pydicom/pixel_data_handlers/numpy_handler.py');
    // The newest output is what the agent reads next: never masked, whatever its age; once another follows, it may be.
    const seq = listing?.seq ?? -1;
    const upTo = (n: number) => messages.slice(0, n);
    const bare = (xs: SessionMessage[]) => ({ ...protectionOf(xs, BALANCED_DEFAULTS.protection), whole: new Set<number>() });
    for (const n of [seq, seq + 1]) expect(maskObservations(upTo(n), bare(upTo(n)), { keepLatestTurns: 0, minTokens: 0 }, count).masked).not.toContain(seq);
    expect(maskObservations(upTo(seq + 2), bare(upTo(seq + 2)), { keepLatestTurns: 0, minTokens: 0 }, count).masked).toContain(seq);
  });
});
