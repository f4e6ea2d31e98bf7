// ApiKeyLookups with its repository mocked (newTestService): what is remembered, for how long, and what is never.
import { ApiKeyRepository, UnrevokedApiKey } from '@compactor/persistence';
import { newTestService } from '@compactor/testing/unit';
import { API_CONFIG } from '../config/api-config';
import { ApiKeyLookups } from './api-key-lookups';

const key = (overrides: Partial<UnrevokedApiKey> = {}): UnrevokedApiKey => ({
  id: 'key-1',
  tenantId: 'tenant-1',
  name: 'agent',
  prefix: 'ck_abcd',
  scopes: ['ingest', 'read'],
  createdAt: new Date('2026-11-01T00:00:00Z'),
  revokedAt: null,
  expiresAt: null,
  lastUsedAt: null,
  expired: false,
  ...overrides,
});

function setup(API_KEY_CACHE_MS = 1_000) {
  const { sut, mocks } = newTestService(ApiKeyLookups, { provide: [[API_CONFIG, { API_KEY_CACHE_MS }]] });
  return { sut, keys: mocks.get(ApiKeyRepository) };
}

afterEach(() => jest.useRealTimers());

describe('ApiKeyLookups', () => {
  it('remembers an active key for API_KEY_CACHE_MS, then looks it up again', async () => {
    jest.useFakeTimers({ now: new Date('2026-11-28T00:00:00Z') });
    const s = setup(1_000);
    s.keys.findUnrevokedByHash.mockResolvedValue(key());
    expect(await s.sut.unrevoked('h1')).toMatchObject({ id: 'key-1', expired: false });
    jest.advanceTimersByTime(900);
    expect(await s.sut.unrevoked('h1')).toMatchObject({ id: 'key-1', expired: false });
    expect(s.keys.findUnrevokedByHash).toHaveBeenCalledTimes(1);
    jest.advanceTimersByTime(200);
    await s.sut.unrevoked('h1');
    expect(s.keys.findUnrevokedByHash).toHaveBeenCalledTimes(2);
    // Another hash is another key.
    await s.sut.unrevoked('h2');
    expect(s.keys.findUnrevokedByHash).toHaveBeenLastCalledWith('h2');
  });

  it('refuses a remembered key from the instant it expires', async () => {
    jest.useFakeTimers({ now: new Date('2026-11-28T00:00:00.000Z') });
    const s = setup(60_000);
    s.keys.findUnrevokedByHash.mockResolvedValue(key({ expiresAt: new Date('2026-11-28T00:00:00.500Z') }));
    expect((await s.sut.unrevoked('h1'))?.expired).toBe(false);
    jest.advanceTimersByTime(499);
    expect((await s.sut.unrevoked('h1'))?.expired).toBe(false);
    jest.advanceTimersByTime(1);
    expect(await s.sut.unrevoked('h1')).toMatchObject({ expired: true, expiresAt: new Date('2026-11-28T00:00:00.500Z') });
    expect(s.keys.findUnrevokedByHash).toHaveBeenCalledTimes(1);
  });

  it('never remembers an unknown, revoked or expired key: a key created meanwhile works at once', async () => {
    const s = setup();
    s.keys.findUnrevokedByHash.mockResolvedValueOnce(null).mockResolvedValueOnce(key({ expired: true, expiresAt: new Date(0) })).mockResolvedValue(key());
    expect(await s.sut.unrevoked('h1')).toBeNull();
    expect((await s.sut.unrevoked('h1'))?.expired).toBe(true);
    expect((await s.sut.unrevoked('h1'))?.expired).toBe(false);
    expect(s.keys.findUnrevokedByHash).toHaveBeenCalledTimes(3);
  });

  it('forgets every remembered key when one is revoked through this process', async () => {
    const s = setup(60_000);
    s.keys.findUnrevokedByHash.mockResolvedValueOnce(key()).mockResolvedValue(null);
    await s.sut.unrevoked('h1');
    s.sut.forgetAll();
    expect(await s.sut.unrevoked('h1')).toBeNull();
  });

  it('with API_KEY_CACHE_MS=0 looks every request up', async () => {
    const s = setup(0);
    s.keys.findUnrevokedByHash.mockResolvedValue(key());
    await s.sut.unrevoked('h1');
    await s.sut.unrevoked('h1');
    expect(s.keys.findUnrevokedByHash).toHaveBeenCalledTimes(2);
  });

  it('keeps the use stamp of a remembered key, so the guard does not write it again within the minute', async () => {
    const s = setup(60_000);
    s.keys.findUnrevokedByHash.mockResolvedValue(key());
    await s.sut.unrevoked('h1');
    const at = new Date();
    s.sut.touched('h1', at);
    expect((await s.sut.unrevoked('h1'))?.lastUsedAt).toEqual(at);
  });
});
