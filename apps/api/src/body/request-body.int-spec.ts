import http from 'node:http';
import zlib from 'node:zlib';
import { AddressInfo } from 'node:net';
import request from 'supertest';
import { startProxyTestStack, ProxyTestStack } from '../proxy/proxy-test-stack';
import { MAX_JSON_DEPTH } from './json-body-limits';

/**
 * Issue #15 F3/F11 and the bad-input 500s, over real HTTP: a body is read only after its key passed,
 * JSON nesting is limited, and text PostgreSQL cannot store as sent is refused naming the field;
 * nothing is stored and nothing is forwarded.
 */
describe('request bodies: authentication before parsing, depth and text limits', () => {
  let stack: ProxyTestStack;
  let admin: string;
  let readOnly: string;
  const sid = (label: string) => `${label}-${Math.random().toString(36).slice(2, 10)}`;

  beforeAll(async () => {
    stack = await startProxyTestStack();
    admin = await stack.api.tenantKey(['ingest', 'read', 'admin']);
    readOnly = await stack.api.tenantKey(['read']);
  });
  afterAll(async () => {
    await stack.api.close();
    await stack.fake.close();
  });

  const agent = () => request(stack.api.app.getHttpServer());
  const as = (key: string) => ({ Authorization: `Bearer ${key}` });
  const port = () => (stack.api.app.getHttpServer().address() as AddressInfo).port;
  const expectNoSession = async (id: string) => {
    const res = await agent().get(`/v1/sessions/${id}`).set(as(admin)).expect(404);
    expect(res.body.error.code).toBe('session_not_found');
  };

  /**
   * Announces a 32 MB body and sends only its first bytes: an answer can only come from a server
   * that decided without reading the body. Resolves undefined when none came within `waitMs`.
   */
  function answerToUnfinishedBody(path: string, headers: Record<string, string>, waitMs = 3000): Promise<{ status: number; body: unknown } | undefined> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: port(), path, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(32 * 1024 * 1024), ...headers } });
      const timer = setTimeout(() => {
        req.destroy();
        resolve(undefined);
      }, waitMs);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          clearTimeout(timer);
          req.destroy();
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
        });
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        if (error.code === 'ECONNRESET' || error.code === 'EPIPE') resolve(undefined);
        else reject(error);
      });
      req.write('{"model":"gpt-4o","messages":[{"role":"user","content":"');
    });
  }

  describe('authentication before the body is read', () => {
    it('refuses a REST body without a valid key before reading it, on any path', async () => {
      for (const path of [`/v1/sessions/${sid('f3')}/messages`, '/no-such-route', '/health']) {
        const none = await answerToUnfinishedBody(path, {});
        expect(none).toEqual({ status: 401, body: { error: { code: 'unauthorized', message: 'A valid API key is required: Authorization: Bearer <key>' } } });
        const unknown = await answerToUnfinishedBody(path, as('ck_not_a_key'));
        expect(unknown).toEqual({ status: 401, body: { error: { code: 'unauthorized', message: 'The API key is unknown or revoked' } } });
      }
    });

    it('reads the body of a caller with a valid key (the control: the server waits for the rest)', async () => {
      expect(await answerToUnfinishedBody(`/v1/sessions/${sid('f3ok')}/messages`, as(admin), 500)).toBeUndefined();
    });

    it('refuses a proxy body without a valid X-Compactor-Key before reading it, in the provider error shape', async () => {
      const requestsBefore = stack.fake.requests.length;
      expect(await answerToUnfinishedBody('/v1/proxy/anthropic/v1/messages', { 'x-api-key': 'sk-provider' })).toEqual({
        status: 401,
        body: { type: 'error', error: { type: 'authentication_error', message: 'Compactor proxy: a Compactor API key is required in the X-Compactor-Key header' } },
      });
      expect(await answerToUnfinishedBody('/v1/proxy/openai/v1/chat/completions', { 'x-compactor-key': 'ck_not_a_key' })).toEqual({
        status: 401,
        body: { error: { message: 'Compactor proxy: the X-Compactor-Key is unknown or revoked', type: 'invalid_request_error', code: 'compactor_key_invalid', param: null } },
      });
      expect(await answerToUnfinishedBody('/v1/proxy/anthropic/v1/files', { 'x-compactor-key': readOnly })).toMatchObject({ status: 403, body: { error: { type: 'permission_error' } } });
      expect(stack.fake.requests.length).toBe(requestsBefore);
    });

    it('answers a proxy body over the limit with 413 in the provider shape, on every proxy route', async () => {
      const over = JSON.stringify({ blob: 'x'.repeat(33 * 1024 * 1024) });
      const message = 'Compactor proxy: the request body is larger than the limit of 32 MB';
      const post = (path: string) => agent().post(path).set({ 'x-compactor-key': stack.key, 'content-type': 'application/json' }).send(over).expect(413);
      expect((await post('/v1/proxy/anthropic/v1/messages')).body).toEqual({ type: 'error', error: { type: 'request_too_large', message } });
      // OpenAI's SDKs read error.message, type and code: Chat Completions and Responses alike.
      for (const path of ['/v1/proxy/openai/v1/chat/completions', '/v1/proxy/openai/v1/responses']) {
        expect([path, (await post(path)).body]).toEqual([path, { error: { message, type: 'invalid_request_error', code: 'request_too_large', param: null } }]);
      }
    });
  });

  describe(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`, () => {
    const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const limitMessage = `(body): nests arrays and objects deeper than the limit of ${MAX_JSON_DEPTH} levels`;

    it('is a 400 naming the limit on REST, and nothing is stored', async () => {
      const id = sid('deep');
      const body = `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"n","input":{"a":${nested(10_000)}}}]}]}`;
      const res = await agent().post(`/v1/sessions/${id}/messages`).set({ ...as(admin), 'content-type': 'application/json' }).send(body).expect(400);
      expect(res.body.error).toEqual({ code: 'validation_failed', message: limitMessage, details: { fields: [{ field: '(body)', message: limitMessage.slice('(body): '.length) }] } });
      await expectNoSession(id);
    });

    it('accepts nesting up to the limit and returns it exactly as appended', async () => {
      const id = sid('deep-ok');
      // body > messages > [0] > content > [0] > input > a: 6 levels before the nested value
      const input = `{"a":${nested(MAX_JSON_DEPTH - 6)}}`;
      const body = `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"n","input":${input}}]}]}`;
      await agent().post(`/v1/sessions/${id}/messages`).set({ ...as(admin), 'content-type': 'application/json' }).send(body).expect(201);
      const history = await agent().get(`/v1/sessions/${id}/messages?limit=10`).set(as(admin)).expect(200);
      expect(JSON.stringify(history.body.messages[1].message.content[0].input)).toBe(input);
    });

    it('is a 400 in the provider shape on the proxy, and nothing is forwarded or stored', async () => {
      const id = sid('deep-proxy');
      const requestsBefore = stack.fake.requests.length;
      const body = `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"x","extra":${nested(10_000)}}]}]}`;
      const res = await agent()
        .post('/v1/proxy/anthropic/v1/messages')
        .set({ 'x-compactor-key': stack.key, 'x-compactor-session': id, 'content-type': 'application/json' })
        .send(body)
        .expect(400);
      expect(res.body).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: `Compactor proxy: ${limitMessage}` } });
      expect(stack.fake.requests.length).toBe(requestsBefore);
      await expectNoSession(id);
    });
  });

  describe('U+0000 and unpaired surrogates', () => {
    const appendRaw = (id: string, body: string) => agent().post(`/v1/sessions/${id}/messages`).set({ ...as(admin), 'content-type': 'application/json' }).send(body);
    const cases: Array<[string, string, string, string]> = [
      ['NUL in a text', '{"model":"gpt-4o","messages":[{"role":"user","content":"a\\u0000b"}]}', 'messages[0].content', 'contains U+0000 (NUL), which PostgreSQL cannot store in text'],
      ['NUL in a model name', '{"model":"gpt-\\u00004o","messages":[{"role":"user","content":"x"}]}', 'model', 'contains U+0000 (NUL), which PostgreSQL cannot store in text'],
      [
        'NUL in a tool name',
        '{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"a\\u0000b","input":{}}]}]}',
        'messages[1].content[0].name',
        'contains U+0000 (NUL), which PostgreSQL cannot store in text',
      ],
      [
        'NUL in a key',
        '{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"n","input":{"k\\u0000":1}}]}]}',
        'messages[1].content[0].input.k\\u0000',
        'is a key that contains U+0000 (NUL), which PostgreSQL cannot store in text',
      ],
      ['NUL in a goal marker', '{"model":"gpt-4o","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"[GOAL] fix \\u0000 bug"}]}', 'messages[1].content', 'contains U+0000 (NUL), which PostgreSQL cannot store in text'],
      ['a lone high surrogate', '{"model":"gpt-4o","messages":[{"role":"user","content":"a\\ud800b"}]}', 'messages[0].content', 'contains an unpaired UTF-16 surrogate (\\uD800-\\uDFFF), which is not valid Unicode text'],
      ['a lone low surrogate in a model name', '{"model":"gpt\\uDC004o","messages":[{"role":"user","content":"x"}]}', 'model', 'contains an unpaired UTF-16 surrogate (\\uD800-\\uDFFF), which is not valid Unicode text'],
    ];

    it.each(cases)('%s is a 400 naming the field, and nothing is stored', async (_name, body, field, message) => {
      const id = sid('text');
      const res = await appendRaw(id, body).expect(400);
      expect(res.body.error).toEqual({ code: 'validation_failed', message: `${field}: ${message}`, details: { fields: [{ field, message }] } });
      await expectNoSession(id);
    });

    it('refuses them in every body, not only appends (a goal, a key name)', async () => {
      const id = sid('goal');
      await appendRaw(id, '{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}').expect(201);
      const goal = await agent().put(`/v1/sessions/${id}/goal`).set({ ...as(admin), 'content-type': 'application/json' }).send('{"goal":"ship \\u0000 it"}').expect(400);
      expect(goal.body.error.details.fields).toEqual([{ field: 'goal', message: 'contains U+0000 (NUL), which PostgreSQL cannot store in text' }]);
      const key = await agent().post('/v1/keys').set({ ...as(admin), 'content-type': 'application/json' }).send('{"name":"a\\ud800","scopes":["read"]}').expect(400);
      expect(key.body.error.details.fields[0].field).toBe('name');
      const keys = await agent().get('/v1/keys').set(as(admin)).expect(200);
      expect(keys.body.keys.map((k: { name: string }) => k.name)).not.toContain('a\ud800');
    });

    it('stores escaped surrogate pairs and escaped backslashes exactly as appended', async () => {
      const id = sid('pairs');
      // Python's json.dumps escapes every non-ASCII character: an emoji arrives as a pair of escapes.
      const text = 'smile \ud83d\ude00, a literal \\u0000 and \\ud800 as text';
      await appendRaw(id, JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: text }] }).replace('\ud83d\ude00', '\\ud83d\\ude00')).expect(201);
      const history = await agent().get(`/v1/sessions/${id}/messages?limit=10`).set(as(admin)).expect(200);
      expect(history.body.messages[0].message.content).toBe(text);
    });

    it('is a 400 in the provider shape on the proxy, and nothing is forwarded or stored', async () => {
      const id = sid('nul-proxy');
      const requestsBefore = stack.fake.requests.length;
      const body = '{"model":"gpt-4o","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y"},{"role":"user","content":"tool said \\u0000"}]}';
      const res = await agent().post('/v1/proxy/openai/v1/chat/completions').set({ 'x-compactor-key': stack.key, 'x-compactor-session': id, 'content-type': 'application/json' }).send(body).expect(400);
      expect(res.body).toEqual({
        error: { message: 'Compactor proxy: messages[2].content: contains U+0000 (NUL), which PostgreSQL cannot store in text', type: 'invalid_request_error', code: 'invalid_request', param: null },
      });
      expect(stack.fake.requests.length).toBe(requestsBefore);
      await expectNoSession(id);
    });
  });

  /** Bodies of 1 MB or more are read by the API and parsed on a worker thread (large-json-body.ts): the same answers as express.json gives. */
  describe('large bodies (parsed off the event loop)', () => {
    const pad = 'x'.repeat(2 << 20);
    const appendRaw = (id: string, body: string) => agent().post(`/v1/sessions/${id}/messages`).set({ ...as(admin), 'content-type': 'application/json' }).send(body);
    const big = (tail: string) => `{"model":"gpt-4o","messages":[{"role":"user","content":"${pad}"},${tail}]}`;

    it('stores a 2 MB append exactly', async () => {
      const id = sid('big-ok');
      const text = `${pad} smile \ud83d\ude00 and a literal \\u0000`;
      await appendRaw(id, `\ufeff ${JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: text }] })}`).expect(201);
      const history = await agent().get(`/v1/sessions/${id}/messages?limit=10`).set(as(admin)).expect(200);
      expect(history.body.messages[0].message.content).toBe(text);
    });

    it('answers bad JSON at 2 MB as at 60 bytes (400 invalid_json), and nothing is stored', async () => {
      const small = await appendRaw(sid('small-bad'), '{"model":"gpt-4o","messages":[').expect(400);
      for (const body of [big('{"role":"user",'), `"${pad}"`, `  7${pad}`]) {
        const id = sid('big-bad');
        const res = await appendRaw(id, body).expect(400);
        expect(res.body).toEqual(small.body);
        expect(res.body.error.code).toBe('invalid_json');
        await expectNoSession(id);
      }
    });

    it('answers a 2 MB body nested too deep with the depth limit', async () => {
      const id = sid('big-deep');
      const res = await appendRaw(id, big(`{"role":"user","content":"y","x":${'['.repeat(MAX_JSON_DEPTH + 1)}${']'.repeat(MAX_JSON_DEPTH + 1)}}`)).expect(400);
      expect(res.body.error.message).toBe(`(body): nests arrays and objects deeper than the limit of ${MAX_JSON_DEPTH} levels`);
      await expectNoSession(id);
    });

    it('answers U+0000 and a lone surrogate in a 2 MB body naming the field', async () => {
      for (const [escape, message] of [
        ['\\u0000', 'contains U+0000 (NUL), which PostgreSQL cannot store in text'],
        ['\\uDC00', 'contains an unpaired UTF-16 surrogate (\\uD800-\\uDFFF), which is not valid Unicode text'],
      ]) {
        const id = sid('big-nul');
        const res = await appendRaw(id, big(`{"role":"assistant","content":"y"},{"role":"user","content":"a${escape}"}`)).expect(400);
        expect(res.body.error).toEqual({ code: 'validation_failed', message: `messages[2].content: ${message}`, details: { fields: [{ field: 'messages[2].content', message }] } });
        await expectNoSession(id);
      }
    });

    it('answers a body over the limit with 413 (refused on its Content-Length), and nothing is stored', async () => {
      const id = sid('big-over');
      const over = await appendRaw(id, big(`{"role":"user","content":"${'y'.repeat(31 << 20)}"}`)).expect(413);
      expect(over.body.error).toEqual({ code: 'payload_too_large', message: 'Request body is larger than the limit of 32 MB' });
      await expectNoSession(id);
    });

    it('still parses a large chunked body (no Content-Length) the same way', async () => {
      const id = sid('big-chunked');
      const res = await new Promise<{ status: number; body: { error?: { code: string } } }>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port: port(), path: `/v1/sessions/${id}/messages`, method: 'POST', headers: { ...as(admin), 'content-type': 'application/json' } }, (r) => {
          const chunks: Buffer[] = [];
          r.on('data', (c: Buffer) => chunks.push(c));
          r.on('end', () => resolve({ status: r.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
        });
        req.on('error', reject);
        req.write(big('{"role":"user",'));
        req.end();
      });
      expect(res).toEqual({ status: 400, body: { error: { code: 'invalid_json', message: 'Request body is not valid JSON' } } });
    });

    /** Sends `body` as written, with the given headers, over plain HTTP (chunked when no Content-Length is set). */
    const rawPost = (id: string, headers: Record<string, string>, chunks: Buffer[]) =>
      new Promise<{ status: number; body: { error?: { code: string; message: string } } }>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port: port(), path: `/v1/sessions/${id}/messages`, method: 'POST', headers: { ...as(admin), 'content-type': 'application/json', ...headers } }, (r) => {
          const out: Buffer[] = [];
          r.on('data', (c: Buffer) => out.push(c));
          r.on('end', () => resolve({ status: r.statusCode ?? 0, body: JSON.parse(Buffer.concat(out).toString('utf8')) }));
        });
        req.on('error', reject);
        for (const c of chunks) req.write(c);
        req.end();
      });

    it('stores a chunked body and a gzip, deflate or br one exactly, small or large (read as a stream, parsed on the worker thread)', async () => {
      for (const [encoding, encode] of [
        ['identity', (b: Buffer) => b],
        ['gzip', zlib.gzipSync],
        ['deflate', zlib.deflateSync],
        ['br', zlib.brotliCompressSync],
      ] as const) {
        for (const text of ['a short one', `${pad} smile \ud83d\ude00`]) {
          const id = sid(`streamed-${encoding}`);
          const json = Buffer.from(JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: text }] }));
          const body = encode(json);
          // Chunked: written in pieces, without a Content-Length.
          const pieces = [body.subarray(0, body.length >> 1), body.subarray(body.length >> 1)];
          const res = await rawPost(id, encoding === 'identity' ? {} : { 'content-encoding': encoding }, pieces);
          expect(res.status).toBe(201);
          const history = await agent().get(`/v1/sessions/${id}/messages?limit=10`).set(as(admin)).expect(200);
          expect(history.body.messages[0].message.content).toBe(text);
        }
      }
    });

    it('answers a compressed body over the limit once inflated with 413, and a corrupt one with 400; nothing is stored', async () => {
      const over = sid('gzip-over');
      const bomb = zlib.gzipSync(Buffer.from(big(`{"role":"user","content":"${'y'.repeat(31 << 20)}"}`)));
      const res = await rawPost(over, { 'content-encoding': 'gzip', 'content-length': String(bomb.length) }, [bomb]);
      expect(res).toEqual({ status: 413, body: { error: { code: 'payload_too_large', message: 'Request body is larger than the limit of 32 MB' } } });
      await expectNoSession(over);
      const corrupt = sid('gzip-corrupt');
      const bad = await rawPost(corrupt, { 'content-encoding': 'gzip' }, [Buffer.from('not gzip at all')]);
      expect(bad.status).toBe(400);
      await expectNoSession(corrupt);
    });
  });
});
