import { maskUrl } from './mask-url';
import { parseRedisUrl } from './redis-url';
import { redisUrl } from './env-fields';

describe('REDIS_URL forms (issue #18: Redis Cluster and Sentinel)', () => {
  it('reads one server as before', () => {
    expect(parseRedisUrl('redis://127.0.0.1:6379')).toEqual({ kind: 'single', url: 'redis://127.0.0.1:6379' });
    expect(parseRedisUrl('rediss://u:p@redis.example.com:6380/2')).toEqual({ kind: 'single', url: 'rediss://u:p@redis.example.com:6380/2' });
  });

  it('reads a cluster from some of its nodes, with credentials', () => {
    expect(parseRedisUrl('redis+cluster://10.0.0.1:7000,10.0.0.2:7001')).toEqual({
      kind: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
      ],
    });
    expect(parseRedisUrl('redis+cluster://default:s%40cret@h:7000')).toEqual({ kind: 'cluster', nodes: [{ host: 'h', port: 7000 }], username: 'default', password: 's@cret' });
    expect(parseRedisUrl('redis+cluster://:pw@h:7000')).toMatchObject({ password: 'pw' });
  });

  it('reads a sentinel set, the primary name and the database', () => {
    expect(parseRedisUrl('redis+sentinel://s1:26379,s2:26380/mymaster')).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26380 },
      ],
      name: 'mymaster',
      db: 0,
    });
    expect(parseRedisUrl('redis+sentinel://:pw@s1:26379/main/3')).toMatchObject({ name: 'main', db: 3, password: 'pw' });
  });

  it('refuses what it cannot connect to, saying why; the config field refuses it too', () => {
    expect(() => parseRedisUrl('redis+cluster://h')).toThrow('"h" is not host:port');
    expect(() => parseRedisUrl('redis+cluster://h:7000/1')).toThrow('no path');
    expect(() => parseRedisUrl('redis+sentinel://s1:26379')).toThrow('names the primary');
    expect(() => parseRedisUrl('redis+sentinel://s1:26379/m/x')).toThrow('/masterName/db');
    expect(() => parseRedisUrl('http://h:6379')).toThrow('redis://');
    expect(redisUrl.safeParse('redis+cluster://h:1,h:2').success).toBe(true);
    expect(redisUrl.safeParse('redis+cluster://h:99999').success).toBe(false);
  });

  it('masks the password of every form', () => {
    expect(maskUrl('redis+cluster://default:secret@h:7000,h:7001')).toBe('redis+cluster://***@h:7000,h:7001');
    expect(maskUrl('redis+sentinel://:secret@s:26379/m')).toBe('redis+sentinel://***@s:26379/m');
    expect(maskUrl('redis+cluster://h:7000')).toBe('redis+cluster://h:7000');
  });
});
