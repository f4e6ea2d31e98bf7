import fc from 'fast-check';
import request from 'supertest';
import { PrismaService } from '@compactor/persistence';
import { startTestApi, TestApi } from '../test-app';

/**
 * Posts thousands of malformed payloads: every one must get a 4xx naming a field (never a
 * 5xx), and none may leave anything behind.
 */
describe('append fuzz: malformed payloads', () => {
  let api: TestApi;
  let key: string;
  beforeAll(async () => {
    api = await startTestApi();
    key = await api.tenantKey();
  });
  afterAll(() => api.close());

  const junk = fc.oneof(
    fc.constant(null),
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.string({ maxLength: 20 }),
    fc.constant([]),
    fc.constant({}),
    fc.string({ minLength: 300, maxLength: 400 }),
  );
  const role = fc.oneof(fc.constantFrom('user', 'assistant', 'system', 'tool', 'developer', 'function', 'robot', ''), junk);
  const block = fc.oneof(
    fc.record({ type: fc.constantFrom('text'), text: junk }),
    fc.record({ type: fc.constant('tool_use'), id: fc.oneof(junk, fc.string({ minLength: 257, maxLength: 300 })), name: junk, input: junk }),
    fc.record({ type: fc.constant('tool_result'), tool_use_id: fc.oneof(fc.string({ maxLength: 12 }), junk), content: junk }),
    fc.record({ type: fc.constant('image'), source: junk }),
    fc.record({ type: fc.constant('thinking'), thinking: junk, signature: junk }),
    fc.record({ type: fc.constant('image_url'), image_url: junk }),
    junk,
  );
  const message = fc.oneof(
    fc.record({ role, content: fc.oneof(junk, fc.array(block, { maxLength: 3 })) }, { requiredKeys: [] }),
    fc.record({ role: fc.constant('assistant'), content: junk, tool_calls: fc.oneof(junk, fc.array(fc.record({ id: junk, type: junk, function: junk }), { maxLength: 2 })) }),
    fc.record({ role: fc.constant('tool'), tool_call_id: junk, content: junk }),
    fc.record({ role: fc.constant('user'), blocks: junk }),
    junk,
  );
  const body = fc.oneof(
    fc.record(
      {
        messages: fc.oneof(fc.array(message, { minLength: 1, maxLength: 4 }), junk),
        format: fc.oneof(fc.constantFrom('anthropic', 'openai', 'canonical', 'yaml'), junk),
        model: junk,
        contextWindow: junk,
        policy: fc.oneof(fc.constantFrom('balanced', 'nope'), junk),
        system: junk,
      },
      { requiredKeys: ['messages'] },
    ),
    junk,
  );

  it('answers 2,000 random malformed payloads with 4xx, never 5xx, and stores nothing of rejected ones', async () => {
    const server = api.app.getHttpServer();
    const statuses = new Map<number, number>();
    let accepted = 0;
    let acceptedMessages = 0;
    const acceptedSessions = new Set<string>();
    let sample = 0;
    await fc.assert(
      fc.asyncProperty(body, fc.constantFrom('fz-a', 'fz-b', 'bad id', 'fz:c'), async (payload, sessionId) => {
        sample += 1;
        const res = await request(server)
          .post(`/v1/sessions/${encodeURIComponent(sessionId)}/messages`)
          .set({ Authorization: `Bearer ${key}`, 'content-type': 'application/json' })
          .send(JSON.stringify(payload));
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status >= 500) throw new Error(`${res.status} for ${JSON.stringify(payload).slice(0, 500)}: ${res.text}`);
        if (res.status === 201) {
          accepted += 1;
          acceptedMessages += res.body.lastSeq - res.body.firstSeq + 1;
          acceptedSessions.add(sessionId);
        }
        else {
          expect(res.status).toBeGreaterThanOrEqual(400);
          expect(typeof res.body.error?.code).toBe('string');
          expect(res.body.error.message.length).toBeGreaterThan(0);
        }
      }),
      { numRuns: 2000, seed: 20261122 },
    );
    expect(sample).toBe(2000);
    // Exactly what the 201s reported is stored: no message and no session of a rejected request.
    const prisma = api.app.get(PrismaService);
    expect(await prisma.message.count()).toBe(acceptedMessages);
    const sessions = await prisma.session.findMany({ select: { id: true, externalId: true, lastSeq: true } });
    expect(sessions.map((s) => s.externalId).sort()).toEqual([...acceptedSessions].sort());
    for (const s of sessions) {
      const seqs = await prisma.message.findMany({ where: { sessionId: s.id }, select: { seq: true }, orderBy: { seq: 'asc' } });
      expect(seqs.map((m) => m.seq)).toEqual(Array.from({ length: s.lastSeq }, (_, i) => i + 1));
    }
    expect(accepted).toBeLessThan(2000);
  }, 300_000);
});
