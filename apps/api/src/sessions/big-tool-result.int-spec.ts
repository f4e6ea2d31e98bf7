import { countableParts, parseOpenAIMessages } from '@compactor/compaction';
import { combineCounts, countTextSync, resolveModel } from '@compactor/tokens';
import { createHash, randomBytes } from 'node:crypto';
import { startTestApi, TestApi } from '../test-app';

/**
 * Issue #15: a 30 MB tool result appended over the API (it once took one append 88 s and 3.8 GB of
 * API memory). Through real HTTP to the real database: the history keeps it whole (Guarantee 1),
 * the session's tokens are the count of the same text (the pool counts a text that big in pieces
 * on its threads, which must add up to the whole), and `GET /health` keeps answering while it is
 * appended. Time and memory are measured by `npm run bench -- hostile` (docs/benchmarks.md).
 */

const MB = 1 << 20;

/** `size` characters of shell and log output: a test run, server log lines, a build error, a listing (ASCII). */
function logText(size: number): string {
  const lines: string[] = [];
  let length = 0;
  for (let i = 0; length < size; i++) {
    const hex = ((i * 2654435761) >>> 0).toString(16).padStart(8, '0');
    const line = [
      `2026-11-28T04:${String(Math.floor(i / 60_000) % 60).padStart(2, '0')}:${String(Math.floor(i / 1000) % 60).padStart(2, '0')}.${String(i % 1000).padStart(3, '0')}Z INFO  [http] GET /api/v1/items/${i % 99_991} 200 ${(i % 997) / 10}ms req_id=${hex}${hex}`,
      `    at OrderService.create (/home/app/src/services/order.service.ts:${i % 400}:${i % 80})`,
      `src/components/Table.tsx(${i % 500},${i % 80}): error TS2322: Type 'string' is not assignable to type 'number'.`,
      `-rw-r--r--  1 root root ${String(i % 999_999).padStart(7)} Nov 28 04:${String(i % 60).padStart(2, '0')} file-${hex}.log`,
      `{"level":40,"time":${1764300000000 + i},"msg":"retrying \\"job ${hex}\\" after timeout","attempt":${i % 7}}`,
      `  PASS  test/unit/module-${i % 300}.spec.ts (${i % 2000} ms)`,
    ][i % 6];
    lines.push(line);
    length += line.length + 1;
  }
  return `${lines.join('\n')}\n`.slice(0, size);
}

let api: TestApi;
let key: string;

beforeAll(async () => {
  api = await startTestApi({ LOG_LEVEL: 'warn' });
  key = await api.tenantKey();
}, 60_000);
afterAll(async () => {
  await api?.close();
});

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

it('stores a 30 MB tool result whole, counts its tokens as the whole text counts, and /health answers meanwhile', async () => {
  const base = await api.app.getUrl();
  const text = logText(30 * MB);
  const messages = [
    { role: 'user', content: 'Run the test suite and show me the whole log.' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_log', type: 'function', function: { name: 'bash', arguments: '{"command":"npm test 2>&1"}' } }] },
    { role: 'tool', tool_call_id: 'call_log', content: text },
  ];
  // What the session's tokens must be: the three messages counted whole on this thread, as before the pool counted in pieces.
  // Counted before any request: seconds of counting between two requests outlast the server's keep-alive, and the next
  // fetch on the closed connection fails ('fetch failed' in a fresh clone's run).
  const spec = resolveModel('gpt-4o').spec;
  const parsed = parseOpenAIMessages(messages, 'messages');
  if (!parsed.ok) throw new Error('the test messages do not parse');
  const expected = parsed.value.map((m) => {
    const parts = countableParts(m);
    return combineCounts({ textTokens: parts.texts.map((t) => countTextSync(t, spec.encoding)), images: parts.images, opaqueJson: parts.opaqueJson }, spec);
  });
  const id = `big-result-${randomBytes(4).toString('hex')}`;
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

  // /health probed back to back while the append is in flight: the probes that answered in that time.
  let appending = true;
  let answered = 0;
  const probes = (async () => {
    while (appending) {
      const res = await fetch(`${base}/health`);
      await res.arrayBuffer();
      if (appending && res.status === 200) answered += 1;
    }
  })();
  let res: Response;
  let body: { usage: { contextTokens: number }; firstSeq: number; lastSeq: number };
  try {
    res = await fetch(`${base}/v1/sessions/${id}/messages`, { method: 'POST', headers, body: JSON.stringify({ model: 'gpt-4o', format: 'openai', messages }) });
    body = (await res.json()) as typeof body;
  } finally {
    appending = false;
    await probes;
  }
  expect(res.status).toBe(201);
  expect(answered).toBeGreaterThan(0);
  expect([body.firstSeq, body.lastSeq]).toEqual([1, 3]);

  // Read back through the history API: the tool message exactly as appended.
  const history = await fetch(`${base}/v1/sessions/${id}/messages?after=2&limit=1`, { headers });
  expect(history.status).toBe(200);
  const page = (await history.json()) as { messages: Array<{ seq: number; message: { content: string }; tokens: number }> };
  expect(page.messages.map((m) => m.seq)).toEqual([3]);
  const stored = page.messages[0].message.content;
  expect(stored.length).toBe(text.length);
  expect(sha256(stored)).toBe(sha256(text));

  expect(page.messages[0].tokens).toBe(expected[2]);
  expect(body.usage.contextTokens).toBe(expected.reduce((a, b) => a + b, 0));
  const session = (await (await fetch(`${base}/v1/sessions/${id}`, { headers })).json()) as { usage: { contextTokens: number } };
  expect(session.usage.contextTokens).toBe(body.usage.contextTokens);
}, 180_000);
