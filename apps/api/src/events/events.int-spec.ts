import { EventPublisher, eventChannel } from '@compactor/jobs';
import { EventRepository, PrismaService } from '@compactor/persistence';
import { freePort, longSweAgentSession, pollUntil, RunningApp, startBuiltApp, startWorkerFor } from '@compactor/testing';
import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import request from 'supertest';
import { startTestApi, TestApi } from '../test-app';
import { EventStreamService } from './event-stream.service';

interface StreamedEvent {
  id: string;
  event: string;
  data: { id: string; type: string; line: string; data: Record<string, unknown>; createdAt: string };
}

/** A text/event-stream reader over plain HTTP, as an EventSource (or a Next.js route handler) reads it. */
class SseClient {
  readonly events: StreamedEvent[] = [];
  comments = 0;
  ended = false;
  private buffer = '';

  private constructor(
    private readonly req: http.ClientRequest,
    readonly status: number,
    readonly contentType: string,
  ) {}

  static connect(baseUrl: string, path: string, headers: Record<string, string>): Promise<SseClient> {
    return new Promise((resolve, reject) => {
      const req = http.get(`${baseUrl}${path}`, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
        const client = new SseClient(req, res.statusCode ?? 0, String(res.headers['content-type'] ?? ''));
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => client.feed(chunk));
        res.on('end', () => (client.ended = true));
        res.on('error', () => (client.ended = true));
        resolve(client);
      });
      req.on('error', reject);
    });
  }

  private feed(chunk: string) {
    this.buffer += chunk;
    for (let end = this.buffer.indexOf('\n\n'); end >= 0; end = this.buffer.indexOf('\n\n')) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      const fields: Record<string, string> = {};
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) this.comments += 1;
        else if (line.includes(':')) fields[line.slice(0, line.indexOf(':'))] = line.slice(line.indexOf(':') + 1).replace(/^ /, '');
      }
      if (fields.data !== undefined) this.events.push({ id: fields.id, event: fields.event, data: JSON.parse(fields.data) });
    }
  }

  /** Waits until the stream holds an event matching `match`. */
  waitFor(match: (e: StreamedEvent) => boolean, what: string, timeoutMs = 10_000): Promise<StreamedEvent> {
    return pollUntil(async () => this.events.find(match), { timeoutMs, what });
  }

  close() {
    this.req.destroy();
  }
}

const uid = (label: string) => `${label}-${randomBytes(4).toString('hex')}`;
const baseUrl = (api: TestApi) => `http://127.0.0.1:${(api.app.getHttpServer().address() as AddressInfo).port}`;
/** Session ids in these tests are unique across tenants. */
const sessionRow = async (app: TestApi, externalId: string) =>
  app.app.get(PrismaService).session.findFirstOrThrow({ where: { externalId }, select: { id: true, tenantId: true } });

/** Real agent messages, enough to cross a 32k window's threshold several times. */
const LONG = longSweAgentSession();

describe('session events: GET /v1/sessions/:id/events', () => {
  let api: TestApi;
  let key: string;
  let otherKey: string;
  const tenantName = uid('tenant');
  const clients: SseClient[] = [];

  beforeAll(async () => {
    // A long heartbeat: the heartbeat also re-reads, and these tests must see events arrive through Redis wake-ups alone.
    api = await startTestApi({ EVENTS_HEARTBEAT_MS: '60000' });
    key = await api.tenantKey(undefined, tenantName);
    otherKey = await api.tenantKey();
  });
  afterEach(() => clients.splice(0).forEach((c) => c.close()));
  afterAll(async () => {
    await api?.close();
  });

  const agent = () => request(api.app.getHttpServer());
  const auth = (k = key) => ({ Authorization: `Bearer ${k}` });
  const stream = async (sessionId: string, headers: Record<string, string> = {}, query = '', on: string = baseUrl(api), k = key) => {
    const client = await SseClient.connect(on, `/v1/sessions/${sessionId}/events${query}`, { ...auth(k), ...headers });
    clients.push(client);
    return client;
  };
  /** A session with `n` events recorded directly (as the worker records them), without wake-ups. */
  const seeded = async (n: number, types: string[] = ['compressed']) => {
    const id = uid('events');
    await agent().post('/v1/sessions').set(auth()).send({ id, model: 'gpt-4o' }).expect(201);
    const session = await sessionRow(api, id);
    const tenantId = session.tenantId;
    const rows = await api.app
      .get(EventRepository)
      .recordMany(session.id, tenantId, Array.from({ length: n }, (_, i) => ({ type: types[i % types.length], line: `Event ${i + 1}`, data: { n: i + 1 } })));
    return { id, session, tenantId, ids: rows.map((r) => r.id.toString()) };
  };
  /** One message and a watermark over it: a `watermark-advanced` event recorded by an ordinary API request. */
  const advanceWatermark = async (id: string, on = agent()) => {
    await on
      .post(`/v1/sessions/${id}/messages`)
      .set(auth())
      .send({ format: 'canonical', messages: [{ role: 'user', blocks: [{ type: 'text', text: `step ${randomBytes(3).toString('hex')}` }] }] })
      .expect(201);
    return (await on.post(`/v1/sessions/${id}/watermarks`).set(auth()).send({}).expect(200)).body as { advanced: boolean; watermarkSeq: number };
  };

  describe('JSON', () => {
    it('pages by id with nextCursor (ids as strings), newest first with order=desc, filtered by type', async () => {
      const { id, ids } = await seeded(7, ['compressed', 'offloaded']);
      const first = (await agent().get(`/v1/sessions/${id}/events?limit=3`).set(auth()).expect(200)).body;
      expect(first.sessionId).toBe(id);
      expect(first.events.map((e: { id: string }) => e.id)).toEqual(ids.slice(0, 3));
      expect(first.events[0]).toEqual({ id: ids[0], type: 'compressed', line: 'Event 1', data: { n: 1 }, createdAt: expect.any(String) });
      expect(first.nextCursor).toBe(ids[2]);

      const pages = [first.events];
      for (let cursor = first.nextCursor; cursor; ) {
        const page = (await agent().get(`/v1/sessions/${id}/events?limit=3&after=${cursor}`).set(auth()).expect(200)).body;
        pages.push(page.events);
        cursor = page.nextCursor;
      }
      expect(pages.map((p) => p.length)).toEqual([3, 3, 1]);
      expect(pages.flat().map((e: { line: string }) => e.line)).toEqual(ids.map((_, i) => `Event ${i + 1}`));

      const newest = (await agent().get(`/v1/sessions/${id}/events?order=desc&limit=2`).set(auth()).expect(200)).body;
      expect(newest.events.map((e: { id: string }) => e.id)).toEqual([ids[6], ids[5]]);
      const older = (await agent().get(`/v1/sessions/${id}/events?order=desc&limit=2&before=${newest.nextCursor}`).set(auth()).expect(200)).body;
      expect(older.events.map((e: { id: string }) => e.id)).toEqual([ids[4], ids[3]]);

      const offloaded = (await agent().get(`/v1/sessions/${id}/events?type=offloaded`).set(auth()).expect(200)).body;
      expect(offloaded.events.map((e: { line: string }) => e.line)).toEqual(['Event 2', 'Event 4', 'Event 6']);
      expect(offloaded.nextCursor).toBeNull();
      const both = (await agent().get(`/v1/sessions/${id}/events?type=offloaded&type=compressed&limit=500`).set(auth()).expect(200)).body;
      expect(both.events).toHaveLength(7);

      // A read-only key of the tenant reads them.
      const readKey = await api.tenantKey(['read'], tenantName);
      expect((await agent().get(`/v1/sessions/${id}/events`).set(auth(readKey)).expect(200)).body.events).toHaveLength(7);
    });

    it('answers a bad query value with 400 naming the field, never a 500', async () => {
      const { id } = await seeded(1);
      const cases: [string, string][] = [
        ['limit=0', 'limit: '],
        ['limit=501', 'limit: '],
        ['limit=ten', 'limit: '],
        ['after=-1', 'after: '],
        ['after=abc', 'after: '],
        ['after=9223372036854775808', 'after: '],
        ['before=1.5', 'before: '],
        ['type=Bad!', 'type[0]: '],
        ['order=sideways', 'order: '],
        ['color=blue', 'color'],
      ];
      for (const [query, field] of cases) {
        const res = await agent().get(`/v1/sessions/${id}/events?${query}`).set(auth());
        expect(`${query} → ${res.status} ${res.body.error?.code}`).toBe(`${query} → 400 validation_failed`);
        expect(res.body.error.message).toContain(field);
      }
      const badHeader = await agent().get(`/v1/sessions/${id}/events`).set({ ...auth(), accept: 'text/event-stream', 'last-event-id': 'nope' }).expect(400);
      expect(badHeader.body.error.message).toContain('Last-Event-ID');
      const badOrder = await agent().get(`/v1/sessions/${id}/events?order=desc`).set({ ...auth(), accept: 'text/event-stream' }).expect(400);
      expect(badOrder.body.error.message).toContain('order');
      await agent().get('/v1/sessions/bad%20id!/events').set(auth()).expect(400);
    });

    it("answers 404 for an unknown session and for another tenant's session, as JSON and as a stream", async () => {
      const { id } = await seeded(2);
      await agent().get(`/v1/sessions/${uid('missing')}/events`).set(auth()).expect(404);
      const res = await agent().get(`/v1/sessions/${id}/events`).set(auth(otherKey)).expect(404);
      expect(res.body.error.code).toBe('session_not_found');
      const streamed = await stream(id, {}, '', baseUrl(api), otherKey);
      expect(streamed.status).toBe(404);
      expect(streamed.contentType).toContain('application/json');
      await agent().get(`/v1/sessions/${id}/events`).expect(401);
    });
  });

  describe('text/event-stream', () => {
    it('sends the events after Last-Event-ID, then new ones live as requests record them', async () => {
      const { id, ids } = await seeded(5);
      const client = await stream(id, { 'last-event-id': ids[1] });
      expect(client.status).toBe(200);
      expect(client.contentType).toContain('text/event-stream');
      await client.waitFor((e) => e.id === ids[4], 'the catch-up');
      expect(client.events.map((e) => e.id)).toEqual(ids.slice(2));
      expect(client.events[0]).toEqual({ id: ids[2], event: 'compressed', data: { id: ids[2], type: 'compressed', line: 'Event 3', data: { n: 3 }, createdAt: expect.any(String) } });

      // Live: an event an ordinary request records reaches the open stream, with no reconnect.
      const advanced = await advanceWatermark(id);
      const live = await client.waitFor((e) => e.event === 'watermark-advanced', 'the live watermark-advanced event');
      expect(live.data.line).toBe(`Watermark advanced to message ${advanced.watermarkSeq}`);
      expect(BigInt(live.id)).toBeGreaterThan(BigInt(ids[4]));
      expect(new Set(client.events.map((e) => e.id)).size).toBe(client.events.length);

      // Resuming where the client left off sends nothing twice and nothing before it.
      client.close();
      const resumed = await stream(id, { 'last-event-id': live.id });
      await advanceWatermark(id);
      await resumed.waitFor((e) => e.event === 'watermark-advanced', 'the event after the resume point');
      expect(resumed.events).toHaveLength(1);
      expect(BigInt(resumed.events[0].id)).toBeGreaterThan(BigInt(live.id));
    });

    it('starts from ?after= (0: every event) and filters by type', async () => {
      const { id, ids } = await seeded(4, ['compressed', 'offloaded']);
      const all = await stream(id, {}, '?after=0');
      await all.waitFor((e) => e.id === ids[3], 'every event');
      expect(all.events.map((e) => e.id)).toEqual(ids);
      const later = await stream(id, {}, `?after=${ids[2]}`);
      await later.waitFor((e) => e.id === ids[3], 'the last event');
      expect(later.events.map((e) => e.id)).toEqual([ids[3]]);
      const offloaded = await stream(id, {}, '?type=offloaded,watermark-advanced');
      await advanceWatermark(id);
      await offloaded.waitFor((e) => e.event === 'watermark-advanced', 'the live event of a wanted type');
      expect(offloaded.events.map((e) => e.event)).toEqual(['offloaded', 'offloaded', 'watermark-advanced']);
    });

    it('misses and repeats nothing while events are recorded during the catch-up', async () => {
      const { id, session, tenantId, ids } = await seeded(600);
      const events = api.app.get(EventRepository);
      const publisher = api.app.get(EventPublisher);
      // Writers race the stream's subscribe and catch-up (600 events: more than one catch-up read).
      const writing = (async () => {
        const written: string[] = [];
        for (let i = 0; i < 30; i++) {
          const row = await events.record(session.id, tenantId, 'compressed', `Racing ${i}`);
          publisher.notify(session.id, row!.id);
          written.push(row!.id.toString());
        }
        return written;
      })();
      const client = await stream(id, {}, '?after=0');
      const written = await writing;
      const expected = [...ids, ...written];
      await client.waitFor((e) => e.id === expected.at(-1), 'every event, the racing ones included');
      expect(client.events.map((e) => e.id)).toEqual(expected);
    });

    it('unsubscribes from Redis when the last client of a session disconnects', async () => {
      const { id, session } = await seeded(1);
      const redis = new Redis(api.config.REDIS_URL);
      try {
        const channel = eventChannel(api.config.QUEUE_PREFIX, session.id);
        const subscribers = async () => ((await redis.pubsub('NUMSUB', channel)) as [string, number])[1];
        const streams = api.app.get(EventStreamService);
        const before = streams.streams;
        const a = await stream(id);
        const b = await stream(id);
        await a.waitFor(() => true, 'the first stream');
        await b.waitFor(() => true, 'the second stream');
        // One subscriber connection per process, whatever the number of streams.
        expect(await subscribers()).toBe(1);
        a.close();
        await pollUntil(async () => (streams.streams === before + 1 ? true : undefined), { what: 'the first stream to close' });
        expect(await subscribers()).toBe(1);
        b.close();
        await pollUntil(async () => ((await subscribers()) === 0 ? true : undefined), { what: 'the channel to be unsubscribed' });
        expect(streams.streams).toBe(before);
      } finally {
        redis.disconnect();
      }
    });
  });

  describe('heartbeat and shutdown', () => {
    let quick: TestApi | undefined;
    beforeAll(async () => {
      quick = await startTestApi({ EVENTS_HEARTBEAT_MS: '200', EVENTS_STREAMS_PER_KEY: '2' });
    });
    afterAll(async () => {
      await quick?.close();
    });

    it('sends a comment on every beat, and a beat re-reads events whose wake-up never came', async () => {
      if (!quick) throw new Error('no API');
      const k = await quick.tenantKey();
      const id = uid('beat');
      await request(quick.app.getHttpServer()).post('/v1/sessions').set(auth(k)).send({ id }).expect(201);
      const client = await stream(id, {}, '', baseUrl(quick), k);
      await pollUntil(async () => (client.comments >= 2 ? true : undefined), { what: 'two heartbeat comments' });
      const session = await sessionRow(quick, id);
      // Recorded without a wake-up: only the heartbeat's re-read can deliver it.
      await quick.app.get(EventRepository).record(session.id, session.tenantId, 'compressed', 'Recorded without a wake-up');
      const e = await client.waitFor((x) => x.data.line === 'Recorded without a wake-up', 'the event at the next beat');
      expect(e.event).toBe('compressed');
    });

    it("a revoked key's streams end within one heartbeat; a key holds at most EVENTS_STREAMS_PER_KEY streams (then 429)", async () => {
      if (!quick) throw new Error('no API');
      const admin = await quick.tenantKey(['ingest', 'read', 'admin'], `tenant-${uid('revoke')}`);
      const http = () => request(quick!.app.getHttpServer());
      const created = (await http().post('/v1/keys').set(auth(admin)).send({ name: 'streamer', scopes: ['read'] }).expect(201)).body as { id: string; key: string };
      const id = uid('revoked');
      await http().post('/v1/sessions').set(auth(admin)).send({ id }).expect(201);
      const first = await stream(id, {}, '', baseUrl(quick), created.key);
      const second = await stream(id, {}, '', baseUrl(quick), created.key);
      expect([first.status, second.status]).toEqual([200, 200]);
      const third = await http().get(`/v1/sessions/${id}/events`).set({ ...auth(created.key), accept: 'text/event-stream' }).expect(429);
      expect(third.body.error.message).toContain('EVENTS_STREAMS_PER_KEY');
      // Another key of the tenant is not held back by this one's streams.
      const other = await stream(id, {}, '', baseUrl(quick), admin);
      expect(other.status).toBe(200);

      await http().delete(`/v1/keys/${created.id}`).set(auth(admin)).expect(200);
      await pollUntil(async () => (first.ended && second.ended ? true : undefined), { what: 'the revoked key’s streams to end', timeoutMs: 5_000 });
      expect(other.ended).toBe(false);
      // Their slots are free again (the key itself is refused now).
      await http().get(`/v1/sessions/${id}/events`).set({ ...auth(created.key), accept: 'text/event-stream' }).expect(401);
    });

    it('shutting down ends the open streams instead of waiting for their clients', async () => {
      if (!quick) throw new Error('no API');
      const k = await quick.tenantKey();
      const id = uid('shutdown');
      await request(quick.app.getHttpServer()).post('/v1/sessions').set(auth(k)).send({ id }).expect(201);
      const client = await stream(id, {}, '', baseUrl(quick), k);
      await pollUntil(async () => (quick!.app.get(EventStreamService).streams === 1 ? true : undefined), { what: 'the stream to open' });
      const closing = quick.close();
      quick = undefined;
      await closing;
      await pollUntil(async () => (client.ended ? true : undefined), { what: 'the stream to end' });
    });
  });

  describe('with a worker process', () => {
    let worker: RunningApp;
    beforeAll(async () => {
      worker = await startWorkerFor(api.config);
    }, 60_000);
    afterAll(async () => {
      await worker?.stop();
    });

    it('pushes a compaction live: started, progress, then its outcome, all of one job', async () => {
      const id = uid('live-compaction');
      const append = (messages: Record<string, unknown>[]) =>
        agent()
          .post(`/v1/sessions/${id}/messages`)
          .set(auth())
          .send({ model: 'gpt-4o', contextWindow: 32_000, outputReserve: 4_000, policy: 'factor3', format: 'openai', messages })
          .expect(201);
      await append(LONG.slice(0, 4));
      const client = await stream(id);
      let jobId: string | undefined;
      for (let i = 4; i < LONG.length && !jobId; i += 8) {
        const res = await append(LONG.slice(i, i + 8));
        if (res.body.compaction.scheduled) jobId = res.body.compaction.jobId;
      }
      expect(jobId).toBeDefined();
      const ofJob = (type: string) => (e: StreamedEvent) => e.event === type && e.data.data.jobId === jobId;
      const started = await client.waitFor(ofJob('compaction-started'), `compaction-started of job ${jobId} (worker: ${worker.output().slice(-1500)})`, 30_000);
      expect(started.data.line).toMatch(/^Compaction started \(threshold, factor3\): messages 1–\d+, [\d,]+ tokens$/);
      const outcome = await client.waitFor(
        (e) => ['compressed', 'compression-skipped', 'compression-error'].includes(e.event) && e.data.data.jobId === jobId,
        `the outcome of job ${jobId}`,
        30_000,
      );
      expect(outcome.event).toBe('compressed');
      const progress = client.events.find(ofJob('compaction-progress'));
      expect(progress?.data.line).toMatch(/^Summarizing \d+ messages into a checkpoint of ~[\d,]+ tokens \(the local summarizer\)$/);
      const order = [started, progress!, outcome].map((e) => BigInt(e.id));
      expect([...order].sort((a, b) => (a < b ? -1 : 1))).toEqual(order);
      // The JSON page holds the same events, by the same ids.
      const page = (await agent().get(`/v1/sessions/${id}/events?limit=500`).set(auth()).expect(200)).body;
      expect(page.events.map((e: { id: string }) => e.id)).toEqual(expect.arrayContaining([started.id, progress!.id, outcome.id]));
    }, 120_000);
  });

  describe('across API replicas', () => {
    let replica: RunningApp;
    let replicaUrl: string;
    beforeAll(async () => {
      const port = await freePort();
      replicaUrl = `http://127.0.0.1:${port}`;
      // Its own process, on the same database, Redis and prefix: nothing is shared but Postgres and Redis.
      replica = await startBuiltApp(
        'api',
        {
          DATABASE_URL: api.config.DATABASE_URL,
          REDIS_URL: api.config.REDIS_URL,
          QUEUE_PREFIX: api.config.QUEUE_PREFIX,
          PORT: String(port),
          LOG_LEVEL: 'warn',
          EVENTS_HEARTBEAT_MS: '60000',
        },
        /Compactor API listening/,
      );
    }, 60_000);
    afterAll(async () => {
      await replica?.stop();
    });

    it('a client streaming from a second API process receives the event a request to the first one recorded, and back', async () => {
      const { id } = await seeded(1);
      const onReplica = await stream(id, {}, '', replicaUrl);
      expect(onReplica.status).toBe(200);
      await onReplica.waitFor(() => true, 'the catch-up on the replica');

      const advanced = await advanceWatermark(id);
      const received = await onReplica.waitFor((e) => e.event === 'watermark-advanced', `the event on the replica (replica output: ${replica.output().slice(-1500)})`);
      expect(received.data.line).toBe(`Watermark advanced to message ${advanced.watermarkSeq}`);

      const onFirst = await stream(id, { 'last-event-id': received.id });
      const back = await advanceWatermark(id, request(replicaUrl));
      const receivedBack = await onFirst.waitFor((e) => e.event === 'watermark-advanced', 'the event caused on the replica');
      expect(receivedBack.data.line).toMatch(new RegExp(`^Watermark advanced to message ${back.watermarkSeq} \\(was \\d+\\)$`));
      expect(onFirst.events).toHaveLength(1);
    });
  });
});
