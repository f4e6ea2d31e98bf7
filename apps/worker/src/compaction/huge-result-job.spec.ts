import { performance } from 'node:perf_hooks';
import {
  CanonicalMessage,
  countableParts,
  EMPTY_PREFIX,
  FactsLedger,
  ingestTransform,
  messageCounter,
  runPreset,
  SessionMessage,
  toolNamesOf,
} from '@compactor/compaction';
import { LocalSummarizer } from '@compactor/llm';
import { resolveModel } from '@compactor/tokens';

/**
 * Issue #15, the 30 MB tool result: the worker's synchronous steps of a compaction job over a session
 * holding one 30 MB result of log text (the facts ledger, balanced's ingest step, the run itself),
 * with the real counter wrapped so that counting any text of 2 MB or more on the calling thread fails
 * the test: the result's count is the stored one (counted at ingest, on the API's token pool).
 * Prints each step's time (the longest synchronous stretch over the text) for the record.
 */
const BIG = 30 << 20;
const REFUSE_CHARS = 2 << 20;

function logLines(chars: number): string {
  const parts: string[] = [];
  let n = 0;
  for (let i = 0; n < chars; i++) {
    const line = `2026-11-28T07:${String(Math.floor(i / 60) % 60).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}.${String(i % 1000).padStart(3, '0')}Z INFO [worker-${i % 7}] GET /api/v1/orders/${i * 7919} 200 ${i % 997}ms src/services/order.service.ts:${i % 400}\n`;
    parts.push(line);
    n += line.length;
  }
  return parts.join('').slice(0, chars);
}

describe('a compaction job over a 30 MB tool result (issue #15)', () => {
  // Both message forms: Anthropic's tool_result in a user message, OpenAI's `tool` message.
  it.each(['user', 'tool'] as const)('never counts the result on the thread (%s message); each synchronous step stays short', async (role) => {
    const spec = resolveModel('gpt-4o').spec;
    const real = messageCounter(spec);
    const counted: number[] = [];
    const countMessage = (m: CanonicalMessage) => {
      const longest = Math.max(0, ...countableParts(m).texts.map((t) => t.length));
      counted.push(longest);
      if (longest >= REFUSE_CHARS) throw new Error(`counted a ${longest}-char text on the worker's thread`);
      return real.countMessage(m);
    };
    const countText = (t: string) => {
      if (t.length >= REFUSE_CHARS) throw new Error(`counted a ${t.length}-char text on the worker's thread`);
      return real.countText(t);
    };
    const big = logLines(BIG);
    const messages: CanonicalMessage[] = [
      { role: 'user', blocks: [{ type: 'text', text: 'Show me the server log.' }] },
      { role: 'assistant', blocks: [{ type: 'tool_use', id: 'call_log', name: 'bash', input: { command: 'cat server.log' } }] },
      { role, blocks: [{ type: 'tool_result', toolUseId: 'call_log', content: big, isError: false }] },
      { role: 'assistant', blocks: [{ type: 'text', text: 'The log shows steady 200s.' }] },
    ];
    // The stored counts (the API counted them at ingest; the big one stands in as a char estimate, the run only needs it stored).
    const stored: SessionMessage[] = messages.map((message, i) => ({ seq: i + 1, message, tokens: i === 2 ? Math.ceil(BIG / 4) : real.countMessage(message) }));

    const times: Record<string, number> = {};
    const timed = <T>(name: string, f: () => T): T => {
      const t0 = performance.now();
      const out = f();
      times[name] = Math.round(performance.now() - t0);
      return out;
    };
    const policy = { preset: 'balanced', overrides: {} } as Parameters<typeof runPreset>[0];
    const ledger = timed('ledger', () => FactsLedger.from(undefined).addAll(stored));
    const ingest = ingestTransform(policy);
    const names = toolNamesOf(stored);
    const history = timed('ingest', () => (ingest ? stored.map((m) => ingest(m, countMessage, names)) : stored));
    const t0 = performance.now();
    const outcome = await runPreset(policy, {
      history,
      prefix: EMPTY_PREFIX,
      budget: 100_000,
      summarizer: new LocalSummarizer(),
      ledger,
      countMessage,
      countText,
      goal: undefined,
      trigger: 'threshold',
    } as Parameters<typeof runPreset>[1]);
    times.run = Math.round(performance.now() - t0);
    console.log(`30 MB log result (${role} message), worker steps (ms): ${JSON.stringify(times)}; longest text counted: ${Math.max(...counted)} chars; steps ${outcome.steps.join(',')}`);
    expect(outcome.status).not.toBe('failed');
    expect(Math.max(...counted)).toBeLessThan(REFUSE_CHARS);
  }, 120_000);
});
