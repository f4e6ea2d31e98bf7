import { PrismaService, SessionRepository } from '@compactor/persistence';
import { longSweAgentSession } from '@compactor/testing';
import request from 'supertest';
import { startTestApiOnOwnRedis, TestApiOnOwnRedis } from '../test-app';
import { CompactionWait } from './compaction-wait';

const LONG = longSweAgentSession();

/**
 * The proxy's wait for a pending compaction is an optimization of the fallback, never a new way for a request to fail:
 * with Redis down (its fail-fast connection refuses the worker check at once) it answers "nothing to wait for" and logs
 * why, and the request goes on with the context it has.
 */
describe('CompactionWait with Redis down', () => {
  let api: TestApiOnOwnRedis;

  beforeAll(async () => {
    api = await startTestApiOnOwnRedis({ COMPACTOR_PROXY_COMPACTION_WAIT_MS: '5000' });
  }, 60_000);
  afterAll(() => api?.close(), 60_000);

  it('gives up at once instead of failing the request, and says why in the log', async () => {
    const key = await api.tenantKey();
    const id = `wait-redis-down-${Date.now()}`;
    // No worker: the compaction the threshold makes due stays queued.
    let jobId: string | undefined;
    for (let i = 0; i < LONG.length && !jobId; i += 6) {
      const res = await request(api.app.getHttpServer())
        .post(`/v1/sessions/${id}/messages`)
        .set({ Authorization: `Bearer ${key}` })
        .send({ model: 'gpt-4o', contextWindow: 24_000, outputReserve: 2_000, format: 'openai', messages: LONG.slice(i, i + 6) })
        .expect(201);
      jobId = res.body.compaction.jobId;
    }
    expect(jobId).toBeDefined();
    const { id: sessionId } = await api.app.get(PrismaService).session.findFirstOrThrow({ where: { externalId: id }, select: { id: true } });
    const session = (await api.app.get(SessionRepository).findById(sessionId))!;

    await api.redis.stop();
    await expect(api.app.get(CompactionWait).settled(session)).resolves.toBeUndefined();
    expect(api.logs.some((l) => l.msg === 'compaction wait skipped: a check failed' && l.session === sessionId)).toBe(true);
  }, 60_000);
});
