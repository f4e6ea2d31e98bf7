/**
 * Summaries are checked against the facts ledger (SPEC.md "Facts ledger"): with an LLM
 * summarizer, the prompt lists the span's entries, and whatever the answer lacks is appended to
 * the checkpoint's Facts section. Here the LLM is the fake upstream over HTTP, and it answers
 * with a summary that drops every fact; the checkpoint still holds them. The session is a real
 * SWE-agent trajectory (testdata/swe-agent-trajectories).
 */
import {
  BALANCED_DEFAULTS,
  checkpointBody,
  checkLedger,
  compactBalanced,
  EMPTY_PREFIX,
  FactsLedger,
  parseOpenAIMessages,
  type CanonicalMessage,
  type SessionMessage,
} from '@compactor/compaction';
import { type FakeLlm, startFakeLlm } from '@compactor/testing';
import { countTextSync } from '@compactor/tokens';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OpenAISummarizer } from './openai';

const KEY = 'sk-ledger-test-key-0123456789';
const DROPPING_SUMMARY = 'The agent looked into a bug and made some changes.';
const countText = (text: string) => countTextSync(text, 'o200k_base');
const countMessage = (m: CanonicalMessage) => 4 + m.blocks.reduce((n, b) => n + countText(JSON.stringify(b)), 0);

function history(file: string): SessionMessage[] {
  const raw = (JSON.parse(readFileSync(join(__dirname, '../../../../testdata/swe-agent-trajectories', file), 'utf8')) as { history: Record<string, unknown>[] }).history;
  // SWE-agent's tool messages carry `tool_call_ids` (a list); the API's OpenAI shape has `tool_call_id`.
  const messages = raw.map(({ tool_call_ids, agent: _a, message_type: _t, thought: _th, action: _ac, cache_control: _c, ...rest }) =>
    Array.isArray(tool_call_ids) ? { ...rest, tool_call_id: tool_call_ids[0] } : rest,
  );
  const parsed = parseOpenAIMessages(messages, 'history');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value.map((message, i) => ({ seq: i + 1, message, tokens: countMessage(message) }));
}

let fake: FakeLlm;
beforeAll(async () => {
  fake = await startFakeLlm({ apiKey: KEY });
});
afterAll(async () => {
  await fake.close();
});

it('a summary that drops the facts gets them back in its Facts section, and the prompt listed them', async () => {
  const messages = history('marshmallow-1867__function_calling_replace_from_source.traj');
  const total = messages.reduce((n, m) => n + m.tokens, 0);
  fake.script(Array.from({ length: 10 }, () => ({ text: DROPPING_SUMMARY })));
  const summarizer = new OpenAISummarizer({ apiKey: KEY, baseUrl: fake.openaiBaseUrl, sleep: async () => undefined, random: () => 0 });

  const outcome = await compactBalanced(
    { history: messages, prefix: EMPTY_PREFIX, budget: Math.floor(total * 0.4), summarizer, countMessage, countText, trigger: 'manual' },
    { ...BALANCED_DEFAULTS, ledgerFraction: 0.2, ledgerMaxFraction: 0.3 },
  );

  expect(outcome.status).toBe('succeeded');
  const [checkpoint] = outcome.prefix.checkpoints;
  expect(checkpoint.text).toBe(DROPPING_SUMMARY);
  expect(checkpoint.facts).toBeDefined();
  // What the LLM was asked to keep: the span's entries, listed before the transcript.
  const prompt = JSON.stringify(fake.completionRequests()[0].body);
  expect(prompt).toContain('Facts to keep verbatim');
  // Every entry the summary lacked was appended, or left out only for room (and said so).
  const ledger = outcome.ledger;
  expect(ledger).toBeDefined();
  expect(ledger?.repaired.length).toBeGreaterThan(5);
  expect(ledger?.kept.length ?? 0).toBeLessThan(ledger?.repaired.length ?? 0);
  // The span's paths and commands are in the checkpoint although its summary names none of them.
  const body = checkpointBody(checkpoint);
  for (const e of ledger?.repaired ?? []) if (e.kind === 'path' || e.kind === 'command') expect(body.toLowerCase()).toContain(e.value.toLowerCase().slice(0, 40));
  // The reliability check reads the same ledger: the repaired checkpoint holds what the summary alone lost.
  const span = messages.filter((m) => m.seq >= checkpoint.fromSeq && m.seq <= checkpoint.toSeq);
  const entries = FactsLedger.of(messages)
    .entries()
    .filter((e) => e.lastSeq >= span[0].seq && e.lastSeq <= span[span.length - 1].seq);
  const withRepair = checkLedger(entries, body).share;
  const summaryAlone = checkLedger(entries, checkpoint.text).share;
  expect(summaryAlone).toBeLessThan(0.1);
  expect(withRepair).toBeGreaterThan(summaryAlone + 0.3);
});
