import Anthropic from '@anthropic-ai/sdk';
import { FakeLlm, pollUntil } from '@compactor/testing';
import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import request from 'supertest';
import { TestApi } from '../test-app';
import { startProxyTestStack } from './proxy-test-stack';

/**
 * SPEC.md "Budget" through the proxy: the session remembers the max_tokens and tool schemas its
 * requests carry (so the worker compacts to the budget the next request has), and the proxy
 * recalibrates it from the upstream's reported prompt tokens.
 */
let api: TestApi;
let fake: FakeLlm;
let key: string;
let base: string;
/** The prompt tokens the fake upstream reports for the next answers (undefined: the fake's own estimate, ~4 characters a token). */
let reported: number | undefined;

beforeAll(async () => {
  ({ api, fake, key, base } = await startProxyTestStack({ fake: { respond: () => (reported === undefined ? undefined : { text: 'ok', usage: { inputTokens: reported, outputTokens: 2 } }) } }));
}, 60_000);
afterAll(async () => {
  await api?.close();
  await fake?.close();
});

const uid = (name: string) => `${name}-${randomBytes(4).toString('hex')}`;
const http = () => request(api.app.getHttpServer());
const auth = () => ({ Authorization: `Bearer ${key}` });
const anthropic = (session: string) =>
  new Anthropic({ apiKey: 'sk-test', baseURL: `${base}/v1/proxy/anthropic`, defaultHeaders: { 'X-Compactor-Key': key, 'X-Compactor-Session': session }, maxRetries: 0, logLevel: 'off' });

interface BudgetView {
  reserve: number;
  requestMaxTokens: number | null;
  toolSchemaTokens: number;
  calibration: number;
  budget: number;
}
const budgetOf = async (id: string) => (await http().get(`/v1/sessions/${id}`).set(auth()).expect(200)).body.budget as BudgetView;

const TOOLS: Anthropic.Tool[] = [
  { name: 'Bash', description: 'Runs a shell command and returns its output. '.repeat(20), input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } },
  { name: 'Read', description: 'Reads a file from the local filesystem. '.repeat(20), input_schema: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] } },
];

describe('the proxy and the one budget', () => {
  beforeEach(() => {
    reported = undefined;
  });

  it("remembers a new session's max_tokens and tool-schema tokens, and follows a change", async () => {
    const id = uid('pb-limits');
    const client = anthropic(id);
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'List the files' }];
    // A known report, so the calibration that follows each answer is known too (see the next test).
    reported = 150_000;
    // Large max_tokens need streaming in the SDK (as Claude Code streams).
    const answer = await client.messages.stream({ model: 'claude-opus-4-5', max_tokens: 32_000, tools: TOOLS, messages }).finalMessage();
    const first = await pollUntil(async () => {
      const b = await budgetOf(id);
      return b.requestMaxTokens === 32_000 && b.calibration === 1.25 ? b : undefined;
    }, { timeoutMs: 5_000, what: 'the remembered max_tokens' });
    expect(first.toolSchemaTokens).toBeGreaterThan(300);
    expect(first.reserve).toBe(32_000);
    // (The upstream's report recalibrates the session too: the window's room is divided by the calibration.)
    expect(first.budget).toBe(Math.floor((200_000 - 32_000 - 4_000) / 1.25) - first.toolSchemaTokens);
    // The REST view of the session uses the same budget the proxy forwards with.
    expect((await http().get(`/v1/sessions/${id}`).set(auth()).expect(200)).body.usage.budget).toBe(first.budget);
    // The next request drops the tools and asks for 64,000: the session follows.
    messages.push({ role: 'assistant', content: answer.content }, { role: 'user', content: 'Now without tools' });
    await client.messages.stream({ model: 'claude-opus-4-5', max_tokens: 64_000, messages }).finalMessage();
    const second = await pollUntil(async () => {
      const b = await budgetOf(id);
      return b.requestMaxTokens === 64_000 && b.toolSchemaTokens === 0 && b.calibration === 1.375 ? b : undefined;
    }, { timeoutMs: 5_000, what: 'the changed limits' });
    expect(second.budget).toBe(Math.floor((200_000 - 64_000 - 4_000) / 1.375));
    // Still one conversation: no fork.
    expect((await http().get(`/v1/sessions/${id}`).set(auth()).expect(200)).body.forks).toEqual([]);
  });

  it('counts what it forwards once: the stored counts are what a REST append of the same messages gives', async () => {
    const id = uid('pb-counts');
    const messages: Anthropic.MessageParam[] = [
      { role: 'user', content: 'Fix the failing test in src/app.ts' },
      { role: 'assistant', content: [{ type: 'text', text: 'Reading it.' }, { type: 'tool_use', id: 'toolu_01', name: 'Read', input: { file_path: 'src/app.ts', limit: 40 } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: 'export const answer = 41;\n'.repeat(30) }] },
    ];
    const system = 'You are a careful coding agent.';
    const first = await anthropic(id).messages.create({ model: 'claude-opus-4-5', max_tokens: 4_000, system, tools: TOOLS, messages });
    const next: Anthropic.MessageParam[] = [
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'text', text: 'Now run the tests and tell me which fail. '.repeat(10) }] },
    ];
    await anthropic(id).messages.create({ model: 'claude-opus-4-5', max_tokens: 4_000, system, tools: TOOLS, messages: [...messages, ...next] });
    const proxied = await pollUntil(async () => {
      const res = await http().get(`/v1/sessions/${id}/messages`).set(auth());
      return res.status === 200 && res.body.messages.length === 7 ? (res.body.messages as Array<{ seq: number; tokens: number }>) : undefined;
    }, { timeoutMs: 5_000, what: 'the stored conversation' });
    const rest = uid('pb-counts-rest');
    await http().post(`/v1/sessions/${rest}/messages`).set(auth()).send({ format: 'anthropic', model: 'claude-opus-4-5', system, messages }).expect(201);
    await http().post(`/v1/sessions/${rest}/messages`).set(auth()).send({ format: 'anthropic', messages: next }).expect(201);
    const appended = (await http().get(`/v1/sessions/${rest}/messages`).set(auth()).expect(200)).body.messages as Array<{ seq: number; tokens: number }>;
    // The first request's conversation and the second's new turn; the recorded answers (5 and 7) are counted by the append itself.
    expect([1, 2, 3, 4, 6].map((seq) => proxied.find((m) => m.seq === seq)?.tokens)).toEqual([1, 2, 3, 4, 6].map((seq) => appended.find((m) => m.seq === seq)?.tokens));
  });

  it("a first request that fits only by its exact count is forwarded whole: the byte bounds never decide a fallback", async () => {
    const id = uid('pb-bounds');
    // gpt-4o on a 4,096-token window: a 2,816-token budget. ~2,000 tokens of prose are ~9,000 bytes: over it by their bound.
    await http().post('/v1/sessions').set(auth()).send({ id, model: 'gpt-4o', contextWindow: 4_096 }).expect(201);
    const prose = 'The parser reads each line and keeps the last value it saw for every key. '.repeat(130);
    const messages = [
      { role: 'user', content: prose },
      { role: 'assistant', content: 'Understood.' },
      { role: 'user', content: 'Which value wins?' },
    ];
    const res = await fetch(`${base}/v1/proxy/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test', 'x-compactor-key': key, 'x-compactor-session': id },
      body: JSON.stringify({ model: 'gpt-4o', max_tokens: 500, messages }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-compactor-fallback')).toBeNull();
    expect(Buffer.byteLength(JSON.stringify(messages))).toBeGreaterThan(2_816);
    const forwarded = fake.requests.at(-1)!.body as { messages: Array<{ content: string }> };
    expect(forwarded.messages.map((m) => m.content)).toEqual(messages.map((m) => m.content));
    // The context tokens the response names are the exact counts the history stores.
    const stored = await pollUntil(async () => {
      const r = await http().get(`/v1/sessions/${id}/messages`).set(auth());
      return r.status === 200 && r.body.messages.length === 4 ? (r.body.messages as Array<{ tokens: number }>) : undefined;
    }, { timeoutMs: 5_000, what: 'the stored conversation' });
    expect(Number(res.headers.get('x-compactor-context-tokens'))).toBe(stored.slice(0, 3).reduce((n, m) => n + m.tokens, 0));
  });

  it("recalibrates the budget from the upstream's reported prompt tokens, half way each time, within bounds", async () => {
    const id = uid('pb-calibration');
    const client = anthropic(id);
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Summarize the repository layout' }];
    // The upstream counts far more than we estimated (a tokenizer we underestimate): the ratio is capped at 1.5.
    reported = 150_000;
    const answer = await client.messages.create({ model: 'claude-opus-4-5', max_tokens: 8_000, messages });
    const once = await pollUntil(async () => {
      const b = await budgetOf(id);
      return b.calibration !== 1 ? b : undefined;
    }, { timeoutMs: 5_000, what: 'the first calibration' });
    expect(once.calibration).toBe(1.25);
    const room = 200_000 - 16_384 - 4_000;
    expect(once.budget).toBe(Math.floor(room / 1.25));
    messages.push({ role: 'assistant', content: answer.content }, { role: 'user', content: 'And the tests?' });
    await client.messages.create({ model: 'claude-opus-4-5', max_tokens: 8_000, messages });
    const twice = await pollUntil(async () => {
      const b = await budgetOf(id);
      return b.calibration !== 1.25 ? b : undefined;
    }, { timeoutMs: 5_000, what: 'the second calibration' });
    expect(twice.calibration).toBe(1.375);
    expect(twice.budget).toBe(Math.floor(room / 1.375));
    // The context the proxy reports for the next request is fitted to that budget.
    const context = await http().get(`/v1/sessions/${id}/context`).set(auth()).expect(200);
    expect(context.body.usage.budget).toBe(twice.budget);
  });

  it('OpenAI shape: prompt_tokens recalibrate too; an estimated model may grow its budget, an exactly counted one never does', async () => {
    const openai = (id: string) => new OpenAI({ apiKey: 'sk-test', baseURL: `${base}/v1/proxy/openai/v1`, defaultHeaders: { 'X-Compactor-Key': key, 'X-Compactor-Session': id }, maxRetries: 0, logLevel: 'off' });
    reported = 1;
    // An Ollama model through an OpenAI-compatible server: our count is an estimate, the server's is its tokenizer's.
    const local = uid('pb-ollama');
    await openai(local).chat.completions.create({ model: 'llama3.1:8b', max_completion_tokens: 2_000, messages: [{ role: 'user', content: 'Which tests fail?' }] });
    const grown = await pollUntil(async () => {
      const b = await budgetOf(local);
      return b.calibration !== 1 ? b : undefined;
    }, { timeoutMs: 5_000, what: 'the calibration' });
    expect(grown.calibration).toBe(0.9);
    // gpt-4o is counted with its own tokenizer: a lower report leaves the budget as it is.
    const exact = uid('pb-gpt4o');
    await openai(exact).chat.completions.create({ model: 'gpt-4o', max_completion_tokens: 4_000, messages: [{ role: 'user', content: 'Which tests fail?' }] });
    reported = 100_000;
    // The answer is recorded once it ended (the proxy's next request would wait for it; a REST read polls).
    const exactSession = await pollUntil(async () => {
      const res = await http().get(`/v1/sessions/${exact}/messages`).set(auth());
      return res.status === 200 && res.body.messages.length === 2 ? (res.body.messages as Array<{ message: unknown }>) : undefined;
    }, { timeoutMs: 5_000, what: 'the recorded answer' });
    expect((await budgetOf(exact)).calibration).toBe(1);
    // A higher one shrinks it.
    await openai(exact).chat.completions.create({
      model: 'gpt-4o',
      max_completion_tokens: 4_000,
      messages: [{ role: 'user', content: 'Which tests fail?' }, exactSession[1].message as OpenAI.ChatCompletionMessageParam, { role: 'user', content: 'And why?' }],
    });
    const shrunk = await pollUntil(async () => {
      const b = await budgetOf(exact);
      return b.calibration !== 1 ? b : undefined;
    }, { timeoutMs: 5_000, what: 'the calibration' });
    expect(shrunk.calibration).toBe(1.25);
  });
});
