import Anthropic from '@anthropic-ai/sdk';
import { CanonicalMessage, messageCounter, parseAnthropicMessages, parseOpenAIMessages, providerValidityProblems } from '@compactor/compaction';
import { FakeLlm, FakeLlmRequest, FakeLlmStep, pollUntil, RunningApp, startBuiltApp } from '@compactor/testing';
import { resolveModel } from '@compactor/tokens';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import request from 'supertest';
import { TestApi } from '../test-app';
import { startProxyTestStack } from './proxy-test-stack';

/**
 * The proxy with a worker process (the built one): compactions run in the background while an
 * agent keeps talking through the proxy, and every forwarded request stays within the model's
 * window. Build the worker first: `NX_DAEMON=false npx nx run worker:build`.
 */

const DATA = path.resolve(__dirname, '../../../../testdata/swe-agent-trajectories');
type TrajMessage = { role: string; content: string; tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>; tool_call_ids?: string[] } & Record<string, unknown>;
const load = (file: string) => JSON.parse(readFileSync(path.join(DATA, file), 'utf8')).history as TrajMessage[];
const RUNS = readdirSync(DATA)
  .filter((f) => f.endsWith('.traj'))
  .sort()
  .map(load);

/** The five SWE-agent runs `rounds` times over, as one agent taking task after task (tool ids made unique per round). */
function longConversation(rounds: number): TrajMessage[] {
  const out: TrajMessage[] = [];
  for (let r = 0; r < rounds; r++) {
    RUNS.forEach((run, i) => {
      for (const m of run) {
        if (m.role === 'system' && (r > 0 || i > 0)) continue;
        out.push({
          ...m,
          ...(m.tool_calls ? { tool_calls: m.tool_calls.map((c) => ({ ...c, id: `${c.id}_r${r}` })) } : {}),
          ...(m.tool_call_ids ? { tool_call_ids: m.tool_call_ids.map((id) => `${id}_r${r}`) } : {}),
        });
      }
    });
  }
  return out;
}

/** The fake upstream answers with the trajectory's own next assistant turn, so the agent's history and the recorded one agree. */
function answerWith(m: TrajMessage): FakeLlmStep {
  return { text: m.content, toolCalls: (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, input: JSON.parse(c.function.arguments) })) };
}

const WINDOW = 16_000;
const MAX_TOKENS = 1_024;
const TOOLS: OpenAI.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'bash', description: 'Runs a shell command', parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } } },
  { type: 'function', function: { name: 'submit', description: 'Submits the change', parameters: { type: 'object', properties: {} } } },
];

let api: TestApi;
let fake: FakeLlm;
let worker: RunningApp;
let key: string;
let base: string;

beforeAll(async () => {
  ({ api, fake, key, base } = await startProxyTestStack());
  worker = await startBuiltApp(
    'worker',
    { DATABASE_URL: api.config.DATABASE_URL, REDIS_URL: api.config.REDIS_URL, QUEUE_PREFIX: api.config.QUEUE_PREFIX, COMPACTOR_SUMMARIZER: 'local', LOG_LEVEL: 'warn' },
    /Compactor worker started/,
  );
}, 90_000);
afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await fake?.close();
});

const uid = (name: string) => `${name}-${randomBytes(4).toString('hex')}`;
const http = () => request(api.app.getHttpServer());
const auth = () => ({ Authorization: `Bearer ${key}` });

function parsedOpenAI(r: FakeLlmRequest): CanonicalMessage[] {
  const parsed = parseOpenAIMessages((r.body as { messages: unknown[] }).messages, 'messages');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors).slice(0, 500));
  return parsed.value;
}

/** Whether request `a`'s messages are the start of request `b`'s (what a provider's prefix cache needs). */
function sharesPrefix(a: FakeLlmRequest, b: FakeLlmRequest): boolean {
  const x = (a.body as { messages: unknown[] }).messages;
  const y = (b.body as { messages: unknown[] }).messages;
  return x.length <= y.length && x.every((m, i) => JSON.stringify(m) === JSON.stringify(y[i]));
}

describe('a long agent run through the proxy, with compactions in a worker', () => {
  it('hundreds of turns with large tool outputs: every forwarded request within the window and valid; the prefix changes only when the context does', async () => {
    const session = uid('long');
    await http().post('/v1/sessions').set(auth()).send({ id: session, model: 'gpt-4o', contextWindow: WINDOW, outputReserve: 1_000, policy: 'balanced' }).expect(201);
    const client = new OpenAI({ apiKey: 'sk-upstream', baseURL: `${base}/v1/proxy/openai/v1`, defaultHeaders: { 'X-Compactor-Key': key, 'X-Compactor-Session': session }, maxRetries: 0 });
    const rounds = Number(process.env.PROXY_ROUNDS ?? 4);
    const conversation = longConversation(rounds);
    const counter = messageCounter(resolveModel('gpt-4o').spec);
    const toolTokens = counter.countText(JSON.stringify(TOOLS));
    const turns: Array<{ request: FakeLlmRequest; version: number; fallback: boolean; tokens: number }> = [];

    for (let j = 1; j < conversation.length; j++) {
      if (conversation[j].role !== 'assistant') continue;
      const before = fake.requests.length;
      fake.enqueue(answerWith(conversation[j]));
      const { response } = await client.chat.completions
        .create({ model: 'gpt-4o', max_tokens: MAX_TOKENS, tools: TOOLS, messages: conversation.slice(0, j) as unknown as OpenAI.ChatCompletionMessageParam[] })
        .withResponse();
      const forwarded = fake.requests[before];
      const messages = parsedOpenAI(forwarded);
      const tokens = messages.reduce((n, m) => n + counter.countMessage(m), 0);
      // Never over the window: the forwarded messages, the tool schemas and the answer's room together.
      if (tokens + toolTokens + MAX_TOKENS > WINDOW) throw new Error(`turn ${j}: ${tokens} + ${toolTokens} + ${MAX_TOKENS} tokens exceed the ${WINDOW}-token window`);
      expect(providerValidityProblems(messages)).toEqual([]);
      expect({ turn: j, session: response.headers.get('x-compactor-session') }).toEqual({ turn: j, session });
      turns.push({ request: forwarded, version: Number(response.headers.get('x-compactor-context-version')), fallback: response.headers.get('x-compactor-fallback') === 'applied', tokens });
    }
    expect(turns.length).toBeGreaterThanOrEqual(60 * rounds);
    expect(turns.at(-1)!.version).toBeGreaterThanOrEqual(1);

    // Prompt caches: consecutive requests share their prefix unless a compaction was applied or the fallback had to act.
    let shared = 0;
    let changedByCompaction = 0;
    let changedByFallback = 0;
    for (let i = 1; i < turns.length; i++) {
      const [a, b] = [turns[i - 1], turns[i]];
      if (sharesPrefix(a.request, b.request)) shared++;
      else if (a.version !== b.version) changedByCompaction++;
      else if (a.fallback || b.fallback) changedByFallback++;
      else throw new Error(`turns ${i - 1}→${i}: the forwarded prefix changed without a compaction or the fallback`);
    }
    const pairs = turns.length - 1;
    console.log(
      `proxy prefix sharing over ${turns.length} forwarded requests (window ${WINDOW}): ${shared}/${pairs} consecutive pairs share their prefix (${((shared / pairs) * 100).toFixed(1)}%); ` +
        `${changedByCompaction} changes when a compaction was applied (${turns.at(-1)!.version} versions), ${changedByFallback} while the fallback was acting; ` +
        `${turns.filter((t) => t.fallback).length} requests needed the fallback; largest forwarded request ${Math.max(...turns.map((t) => t.tokens))} tokens`,
    );
    // How many pairs share their prefix depends on how fast the worker keeps up with the requests (the fallback acts while a
    // compaction is pending), so it is measured in `npm run bench -- proxy` (prefix sharing), not asserted here: a fresh clone's
    // npm test under load saw 114 of 247. What must hold whatever the timing is the check above: every pair whose prefix changed
    // has a compaction applied between them or the fallback acting on one of them.
    expect(shared + changedByCompaction + changedByFallback).toBe(pairs);

    // The history is the whole conversation, each message once (the assistant turns as the upstream answered them).
    const expected = conversation.slice(0, conversation.map((m) => m.role).lastIndexOf('assistant') + 1);
    const stored = await pollUntil(
      async () => {
        const page = (await http().get(`/v1/sessions/${session}/messages?limit=1000`).set(auth()).expect(200)).body.messages as Array<{ role: string; message: unknown }>;
        return page.length === expected.length ? page : undefined;
      },
      { what: 'the last answer recorded', timeoutMs: 10_000 },
    );
    expect(stored.map((m) => m.role)).toEqual(expected.map((m) => m.role));
    stored.forEach((m, i) => {
      if (m.role !== 'assistant') expect(m.message).toEqual(expected[i]);
    });
  }, 240_000);

  it("seed 001 through the proxy: the agent's compress_to_checkpoint call advances the watermark; later requests drop the tool blocks before it", async () => {
    const session = uid('watermark');
    // A window small enough that stripping one large tool output saves the preset's minimum (1,000 tokens).
    await http().post('/v1/sessions').set(auth()).send({ id: session, model: 'claude-opus-4-5', contextWindow: 20_000, outputReserve: 2_000, policy: 'watermark' }).expect(201);
    const client = new Anthropic({
      apiKey: 'sk-ant-upstream',
      baseURL: `${base}/v1/proxy/anthropic`,
      defaultHeaders: { 'X-Compactor-Key': key, 'X-Compactor-Session': session },
      maxRetries: 0,
      logLevel: 'off',
    });
    const params = { model: 'claude-opus-4-5', max_tokens: 512, system: 'You are a coding agent.' };
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Read config.yaml and tell me the port.' }];
    const step = async (answer: FakeLlmStep) => {
      fake.enqueue(answer);
      const message = await client.messages.stream({ ...params, messages }).finalMessage();
      messages.push({ role: 'assistant', content: message.content });
    };
    await step({ text: 'Reading it.', toolCalls: [{ id: 'toolu_read_cfg', name: 'read_file', input: { path: 'config.yaml' } }] });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_read_cfg', content: `port: 8080\n${Array.from({ length: 400 }, (_, i) => `# padding line ${i}`).join('\n')}` }] });
    await step({ text: 'The port is 8080.' });
    messages.push({ role: 'user', content: 'Good. Save a checkpoint, then we move on to the logger.' });
    await step({ text: '', toolCalls: [{ id: 'toolu_ckpt_1', name: 'compress_to_checkpoint', input: { summary: 'Port is 8080.' } }] });

    // The recorded call scheduled a watermark run; the worker applies it.
    const version = await pollUntil(
      async () => {
        const ctx = (await http().get(`/v1/sessions/${session}/context?format=anthropic`).set(auth()).expect(200)).body;
        return ctx.contextVersion >= 1 ? ctx.contextVersion : undefined;
      },
      { what: `the watermark run (worker output: ${worker.output().slice(-1000)})`, timeoutMs: 30_000 },
    );
    expect(version).toBeGreaterThanOrEqual(1);

    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_ckpt_1', content: 'Checkpoint saved.' }, { type: 'text', text: 'Now the logger.' }] });
    const before = fake.requests.length;
    fake.enqueue({ text: 'On it.' });
    const { response } = await client.messages.create({ ...params, messages }).withResponse();
    expect(Number(response.headers.get('x-compactor-context-version'))).toBeGreaterThanOrEqual(1);
    const forwarded = JSON.stringify((fake.requests[before].body as { messages: unknown[] }).messages);
    expect(forwarded).not.toContain('toolu_read_cfg');
    expect(forwarded).not.toContain('# padding line');
    expect(forwarded).toContain('Read config.yaml and tell me the port.');
    expect(forwarded).toContain('The port is 8080.');
    expect(forwarded).toContain('toolu_ckpt_1');
    const parsed = parseAnthropicMessages((fake.requests[before].body as { messages: unknown[] }).messages, 'messages');
    expect(parsed.ok && providerValidityProblems(parsed.value)).toEqual([]);
    // The history keeps everything (Guarantee 1).
    const stored = (await http().get(`/v1/sessions/${session}/messages`).set(auth()).expect(200)).body.messages;
    expect(JSON.stringify(stored)).toContain('toolu_read_cfg');
  }, 60_000);
});
