import { PrismaService } from '@compactor/persistence';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { startTestApi, TestApi } from '../test-app';

const DATA = path.resolve(__dirname, '../../../../testdata/swe-agent-trajectories');
const trajectories = readdirSync(DATA)
  .filter((f) => f.endsWith('.traj'))
  .sort()
  .map((f) => ({ name: f, history: JSON.parse(readFileSync(path.join(DATA, f), 'utf8')).history as Record<string, unknown>[] }));

interface AnthropicMessage {
  role: string;
  content: string | Array<{ type: string; id?: string; tool_use_id?: string }>;
}

/** Guarantee 2 for Anthropic: alternating roles starting with user, every tool_result answering the tool_use right before it. */
function assertValidAnthropic(messages: AnthropicMessage[]) {
  expect(messages[0].role).toBe('user');
  messages.forEach((m, i) => {
    if (i > 0) expect(m.role).not.toBe(messages[i - 1].role);
    const blocks = typeof m.content === 'string' ? [] : m.content;
    const uses = blocks.filter((b) => b.type === 'tool_use').map((b) => b.id);
    const results = blocks.filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id);
    if (results.length > 0) {
      const prev = messages[i - 1].content;
      const prevUses = typeof prev === 'string' ? [] : prev.filter((b) => b.type === 'tool_use').map((b) => b.id);
      expect(results.sort()).toEqual(prevUses.sort());
    }
    if (uses.length > 0) {
      const next = messages[i + 1]?.content;
      expect(next).toBeDefined();
      const nextResults = typeof next === 'string' ? [] : (next ?? []).filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id);
      expect(nextResults.sort()).toEqual(uses.sort());
    }
  });
}

/** The real SWE-agent sessions of testdata/ (copied from ../shared/data) through HTTP: stored exactly, served valid for both providers. */
describe('real agent sessions', () => {
  let api: TestApi;
  let key: string;
  beforeAll(async () => {
    api = await startTestApi();
    key = await api.tenantKey();
  });
  afterAll(() => api.close());
  const http = () => request(api.app.getHttpServer());
  const auth = () => ({ Authorization: `Bearer ${key}` });

  it.each(trajectories.map((t) => [t.name, t] as const))('%s: history is exact and the context is valid', async (_name, t) => {
    const id = `real-${t.name.replace(/[^A-Za-z0-9._-]/g, '_')}`;
    for (let i = 0; i < t.history.length; i += 10) {
      await http()
        .post(`/v1/sessions/${id}/messages`)
        .set(auth())
        .send({ model: 'gpt-4o', format: 'openai', messages: t.history.slice(i, i + 10) })
        .expect(201);
    }
    const history = (await http().get(`/v1/sessions/${id}/messages?limit=1000`).set(auth()).expect(200)).body;
    expect(history.messages.map((m: { message: unknown }) => m.message)).toEqual(t.history);
    const stored = await api.app.get(PrismaService).message.aggregate({
      where: { session: { externalId: id } },
      _sum: { tokens: true },
    });
    const session = (await http().get(`/v1/sessions/${id}`).set(auth()).expect(200)).body;
    expect(Number(session.historyTokens)).toBe(stored._sum.tokens);

    const anthropic = (await http().get(`/v1/sessions/${id}/context?format=anthropic`).set(auth()).expect(200)).body;
    expect(typeof anthropic.system).toBe('string');
    assertValidAnthropic(anthropic.messages);
    expect(anthropic.tokens).toBeLessThanOrEqual(stored._sum.tokens!);

    const openai = (await http().get(`/v1/sessions/${id}/context?format=openai`).set(auth()).expect(200)).body;
    const callIds = new Set<string>();
    for (const m of openai.messages) {
      for (const c of m.tool_calls ?? []) callIds.add(c.id);
      if (m.role === 'tool') expect(callIds.has(m.tool_call_id)).toBe(true);
    }
    // OpenAI-shaped sessions go back to OpenAI as they came, but for the extras only SWE-agent reads.
    expect(openai.messages.length).toBeGreaterThanOrEqual(t.history.length - 1);
  });
});
