import { FakeLlm, pollUntil } from '@compactor/testing';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { TestApi } from '../test-app';
import { startProxyTestStack } from './proxy-test-stack';

/**
 * What Claude Code 2.1 sends with its default model (claude-opus-4-8), end to end over real HTTP
 * with the fake upstream: `role: "system"` messages inside `messages` (beta
 * `mid-conversation-system-2026-04-07`), server-side `compaction` blocks and `context_management`
 * pass through in place and untouched; every message is served back as appended, the keys of a
 * tool_use `input` in the order the model wrote them.
 */

const PROVIDER_KEY = `sk-provider-${randomBytes(12).toString('hex')}`;

let api: TestApi;
let fake: FakeLlm;
let key: string;
let base: string;

beforeAll(async () => {
  ({ api, fake, key, base } = await startProxyTestStack({ fake: { apiKey: PROVIDER_KEY } }));
}, 60_000);
afterAll(async () => {
  await api?.close();
  await fake?.close();
});

const uid = (name: string) => `${name}-${randomBytes(4).toString('hex')}`;
const http = () => request(api.app.getHttpServer());
const auth = () => ({ Authorization: `Bearer ${key}` });

/** A Grep call as Claude Code's model writes it: keys not in alphabetical order, one of them "-n". */
const GREP_INPUT = { pattern: 'TODO', path: 'src', output_mode: 'content', '-n': true };
const GREP_INPUT_JSON = '{"pattern":"TODO","path":"src","output_mode":"content","-n":true}';

/**
 * An Edit call from a real Claude Code session (shared/data/claude-code-viewer-demo, 5c0375b4…,
 * line 45; MIT): `file_path`, `old_string`, `new_string`, an order jsonb would change.
 */
const REAL_EDIT = {
  type: 'tool_use',
  id: 'toolu_019ctBEHhLKehUi4xPDkYwvc',
  name: 'Edit',
  input: {
    file_path: '/path/to/Demo/CLAUDE.md',
    old_string:
      '# TODO App Project\n\n## Project Overview\nA fully functional TODO application built with Next.js 14, TypeScript, and Tailwind CSS. Features modern React patterns, comprehensive state management, and persistent storage.',
    new_string:
      '# TODO App Project\n\n## Project Overview\nA fully functional TODO application built with Next.js 15.5.2, React 19.1.0, TypeScript, and Tailwind CSS v4. Features modern React patterns, comprehensive state management, and persistent storage.',
  },
};

const REMINDER = { role: 'system', content: [{ type: 'text', text: '<system-reminder>\nThe working directory is /repo.\n</system-reminder>', cache_control: { type: 'ephemeral' } }] };
/** Anthropic's server-side compaction block, as the client sends it back inside an assistant turn. */
const COMPACTION_BLOCK = { type: 'compaction', content: 'The user set up the repository; tests pass.', encrypted_content: 'ZW5jcnlwdGVk', cache_control: null };
const CONTEXT_MANAGEMENT = { edits: [{ type: 'clear_tool_uses_20250919', trigger: { type: 'input_tokens', value: 100000 }, keep: { type: 'tool_uses', value: 3 } }] };

/** POSTs exact bytes to the Anthropic proxy route, as Claude Code does. */
async function proxied(session: string, body: unknown): Promise<{ status: number; text: string }> {
  const response = await fetch(`${base}/v1/proxy/anthropic/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': PROVIDER_KEY,
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'claude-code-20250219,context-management-2025-06-27,mid-conversation-system-2026-04-07',
      'x-compactor-key': key,
      'x-compactor-session': session,
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

const historyOf = async (session: string) =>
  (await http().get(`/v1/sessions/${session}/messages?limit=1000`).set(auth()).expect(200)).body.messages as Array<{ seq: number; role: string; message: unknown; blocks: unknown[] }>;
const contextOf = async (session: string, format: string) => (await http().get(`/v1/sessions/${session}/context?format=${format}`).set(auth()).expect(200)).body;
const inputJsonOf = (message: unknown, name: string): string | undefined => {
  const blocks = (message as { content: Array<{ type: string; name?: string; input?: unknown }> }).content;
  const call = Array.isArray(blocks) ? blocks.find((b) => b.type === 'tool_use' && b.name === name) : undefined;
  return call ? JSON.stringify(call.input) : undefined;
};

describe('Claude Code 2.1 request shapes through the proxy', () => {
  it('in-conversation system messages, compaction blocks and context_management are recorded and forwarded in place, byte for byte; tool inputs keep their key order', async () => {
    const session = uid('cc-shapes');
    const before = fake.requests.length;
    const opening = [
      { role: 'user', content: [{ type: 'text', text: 'Set up the repository.' }] },
      { role: 'assistant', content: [COMPACTION_BLOCK, { type: 'text', text: 'Set up; the tests pass.' }] },
      { role: 'user', content: [{ type: 'text', text: 'Show me every TODO with its line number.' }] },
      REMINDER,
    ];
    const params = { model: 'claude-opus-4-8', max_tokens: 64000, system: [{ type: 'text', text: 'You are Claude Code.' }] };
    fake.enqueue({ text: 'Searching.', toolCalls: [{ id: 'toolu_01Grep', name: 'Grep', input: GREP_INPUT }] });
    const first = await proxied(session, { ...params, messages: opening, context_management: CONTEXT_MANAGEMENT });
    expect(first.status).toBe(200);
    const answer = JSON.parse(first.text) as { content: unknown[] };
    expect(inputJsonOf(answer, 'Grep')).toBe(GREP_INPUT_JSON);
    // The first request is forwarded as sent (nothing to compact): system message in place, compaction block and context_management untouched.
    const forwarded1 = fake.requests[before].body as Record<string, unknown>;
    expect(JSON.stringify(forwarded1.messages)).toBe(JSON.stringify(opening));
    expect(JSON.stringify(forwarded1.context_management)).toBe(JSON.stringify(CONTEXT_MANAGEMENT));
    expect(forwarded1).not.toHaveProperty('system', expect.arrayContaining([expect.objectContaining({ text: expect.stringContaining('system-reminder') })]));

    // Recorded: the system message and the answer, at their places in the history.
    const recorded = await pollHistory(session, 6);
    expect(recorded.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user', 'system', 'assistant']);
    expect(recorded[4].message).toEqual(REMINDER);

    // The next turn: the answer as received, its result, and an empty system message carrying a per-turn output_config.
    const next = [
      ...opening,
      { role: 'assistant', content: answer.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01Grep', content: 'src/a.ts:3: // TODO: handle errors' }] },
      { role: 'system', content: [], output_config: { effort: 'low' } },
    ];
    fake.enqueue({ text: 'One TODO: src/a.ts line 3.' });
    const second = await proxied(session, { ...params, messages: next, context_management: CONTEXT_MANAGEMENT });
    expect(second.status).toBe(200);
    expect(second.text).toBe(fake.requests[before + 1].responseBody);
    const forwarded2 = fake.requests[before + 1].body as Record<string, unknown>;
    // The recorded answer comes from the database: the same bytes the model produced, Grep's input keys in their order.
    expect(JSON.stringify(forwarded2.messages)).toBe(JSON.stringify(next));
    expect(inputJsonOf((forwarded2.messages as unknown[])[4], 'Grep')).toBe(GREP_INPUT_JSON);
    expect(JSON.stringify(forwarded2.context_management)).toBe(JSON.stringify(CONTEXT_MANAGEMENT));
    expect(forwarded2.system).toEqual(params.system);

    // The context read back in Anthropic's shape: the history as appended, the system messages where they were.
    const stored = await pollHistory(session, 9);
    const anthropic = await contextOf(session, 'anthropic');
    expect(anthropic.system).toEqual(params.system);
    expect(JSON.stringify(anthropic.messages)).toBe(JSON.stringify([...next, stored[8].message]));
    // OpenAI's shape: system messages in place (the empty one has nothing to say there), Grep's arguments in the model's order.
    const openai = await contextOf(session, 'openai');
    expect((openai.messages as Array<{ role: string }>).map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user', 'system', 'assistant', 'tool', 'assistant']);
    const call = (openai.messages[5] as { tool_calls: Array<{ function: { arguments: string } }> }).tool_calls[0];
    expect(call.function.arguments).toBe(GREP_INPUT_JSON);
    // The history: each message exactly as received, and its canonical blocks keep the order too.
    expect(JSON.stringify(stored[5].message)).toBe(JSON.stringify(next[4]));
    const grep = stored[5].blocks.find((b) => (b as { type: string }).type === 'tool_use') as { input: unknown };
    expect(JSON.stringify(grep.input)).toBe(GREP_INPUT_JSON);
    expect(stored[2].blocks[0]).toEqual({ type: 'opaque', provider: 'anthropic', raw: COMPACTION_BLOCK });
  });

  it('a request whose in-conversation system message carries a tool block is a 400 naming the field; nothing is recorded', async () => {
    const session = uid('cc-bad-system');
    const before = fake.requests.length;
    const bad = await proxied(session, {
      model: 'claude-opus-4-8',
      max_tokens: 100,
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'system', content: [{ type: 'tool_use', id: 'toolu_x', name: 'Bash', input: {} }] },
      ],
    });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text)).toMatchObject({ type: 'error', error: { message: expect.stringContaining('messages[1].content[0]') } });
    expect(fake.requests.length).toBe(before);
    await http().get(`/v1/sessions/${session}/messages`).set(auth()).expect(404);
  });
});

describe('REST appends of Claude Code messages', () => {
  it('a real Edit call and in-conversation system messages come back from the context and the history exactly as appended', async () => {
    const session = uid('cc-rest');
    const messages = [
      { role: 'user', content: 'Update CLAUDE.md with the current versions.' },
      { role: 'system', content: '<system-reminder>CLAUDE.md is in the project root.</system-reminder>' },
      { role: 'assistant', content: [REAL_EDIT] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: REAL_EDIT.id, content: 'The file /path/to/Demo/CLAUDE.md has been updated.' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_02Grep', name: 'Grep', input: GREP_INPUT }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_02Grep', content: 'No matches found' }] },
      { role: 'system', content: [], output_config: { effort: 'medium' } },
      { role: 'assistant', content: [{ type: 'text', text: 'CLAUDE.md is up to date.' }] },
    ];
    await http()
      .post(`/v1/sessions/${session}/messages`)
      .set(auth())
      .send({ format: 'anthropic', model: 'claude-opus-4-8', system: 'You are Claude Code.', messages })
      .expect(201);

    const anthropic = await contextOf(session, 'anthropic');
    expect(anthropic.system).toBe('You are Claude Code.');
    expect(JSON.stringify(anthropic.messages)).toBe(JSON.stringify(messages));
    expect(inputJsonOf(anthropic.messages[2], 'Edit')).toBe(JSON.stringify(REAL_EDIT.input));

    const openai = await contextOf(session, 'openai');
    expect((openai.messages as Array<{ role: string }>).map((m) => m.role)).toEqual(['system', 'user', 'system', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
    expect(openai.messages[2]).toEqual({ role: 'system', content: '<system-reminder>CLAUDE.md is in the project root.</system-reminder>' });
    expect((openai.messages[3] as { tool_calls: Array<{ function: { arguments: string } }> }).tool_calls[0].function.arguments).toBe(JSON.stringify(REAL_EDIT.input));
    expect((openai.messages[5] as { tool_calls: Array<{ function: { arguments: string } }> }).tool_calls[0].function.arguments).toBe(GREP_INPUT_JSON);

    const canonical = await contextOf(session, 'canonical');
    expect((canonical.messages as Array<{ role: string; inConversation?: boolean }>).filter((m) => m.inConversation).map((m) => m.role)).toEqual(['system', 'system']);
    expect(canonical.seqs).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);

    const stored = await historyOf(session);
    expect(stored.slice(1).map((m) => JSON.stringify(m.message))).toEqual(messages.map((m) => JSON.stringify(m)));
    expect(JSON.stringify((stored[3].blocks[0] as { input: unknown }).input)).toBe(JSON.stringify(REAL_EDIT.input));
  });
});

/** Waits until the session's history holds `count` messages (an answer is recorded once it completed). */
function pollHistory(session: string, count: number) {
  return pollUntil(
    async () => {
      const h = await historyOf(session);
      if (h.length > count) throw new Error(`history has ${h.length} messages, more than ${count}: ${JSON.stringify(h.map((m) => m.role))}`);
      return h.length === count ? h : undefined;
    },
    { what: `${count} messages in ${session}`, timeoutMs: 10_000 },
  );
}
