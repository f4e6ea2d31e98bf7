import { createTestDatabase, TestDatabase } from '@compactor/testing';
import { createHash, randomBytes } from 'node:crypto';
import { ApiKeyRepository } from './api-key.repository';
import { PgPoolService } from './pg-pool.service';
import { PrismaService } from './prisma.service';
import { TenantRepository } from './tenant.repository';

/**
 * API processes starting at once on a new database each ensure the default tenant and the init key
 * (COMPACTOR_INIT_API_KEY): a fresh clone's context-replicas spec saw the second of two APIs exit on
 * the tenants' unique name. Two processes are two Prisma clients here, each with its own pool.
 */
describe('TenantRepository.ensure and ApiKeyRepository.ensureExactly under concurrent start-ups (real Postgres)', () => {
  let db: TestDatabase;
  const clients: PrismaService[] = [];
  const pools: PgPoolService[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('tenants');
    for (let i = 0; i < 4; i += 1) {
      clients.push(new PrismaService(db.url));
      pools.push(new PgPoolService(db.url));
    }
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.$disconnect()));
    await Promise.all(pools.map((p) => p.onModuleDestroy()));
    await db?.drop();
  });

  it('gives every caller the same tenant, created once', async () => {
    for (let round = 0; round < 5; round += 1) {
      const name = `t-${randomBytes(4).toString('hex')}`;
      const got = await Promise.all(clients.flatMap((c) => [0, 1].map(() => new TenantRepository(c).ensure(name))));
      expect(new Set(got.map((t) => t.id)).size).toBe(1);
      expect(got.every((t) => t.name === name)).toBe(true);
      expect(await clients[0].tenant.count({ where: { name } })).toBe(1);
    }
  });

  it('leaves exactly one active key of that name and hash when processes ensure it at once', async () => {
    const tenant = await new TenantRepository(clients[0]).ensure(`t-${randomBytes(4).toString('hex')}`);
    for (let round = 0; round < 5; round += 1) {
      const hash = createHash('sha256').update(randomBytes(16)).digest('hex');
      const data = { tenantId: tenant.id, name: 'init', prefix: 'ck_init', hash, scopes: ['admin' as const] };
      await Promise.all(clients.map((c, i) => new ApiKeyRepository(c, pools[i]).ensureExactly(data)));
      const active = await clients[0].apiKey.findMany({ where: { tenantId: tenant.id, name: 'init', revokedAt: null } });
      expect(active.map((k) => k.hash)).toEqual([hash]);
    }
  });
});
