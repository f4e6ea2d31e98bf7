/**
 * REDIS_URL's three forms (issue #18, Redis Cluster and Sentinel):
 * - `redis://[user:password@]host:port[/db]` (or `rediss://`): one server, as before;
 * - `redis+cluster://[user:password@]host:port,host:port,...`: a Redis Cluster, given by some of its nodes;
 * - `redis+sentinel://[user:password@]host:port,host:port,.../masterName[/db]`: a primary found through Sentinel.
 * In the cluster and sentinel forms the password is the Redis servers' (Sentinel itself is asked without one).
 */
export type RedisTarget =
  | { kind: 'single'; url: string }
  | { kind: 'cluster'; nodes: RedisNode[]; username?: string; password?: string }
  | { kind: 'sentinel'; sentinels: RedisNode[]; name: string; db: number; username?: string; password?: string };

export interface RedisNode {
  host: string;
  port: number;
}

const CLUSTER = 'redis+cluster://';
const SENTINEL = 'redis+sentinel://';

/** The connection REDIS_URL names; throws an Error saying what is wrong. */
export function parseRedisUrl(raw: string): RedisTarget {
  if (raw.startsWith(CLUSTER) || raw.startsWith(SENTINEL)) {
    const cluster = raw.startsWith(CLUSTER);
    const rest = raw.slice(cluster ? CLUSTER.length : SENTINEL.length);
    const at = rest.lastIndexOf('@');
    const credentials = at >= 0 ? rest.slice(0, at) : '';
    const afterCredentials = at >= 0 ? rest.slice(at + 1) : rest;
    const slash = afterCredentials.indexOf('/');
    const hostList = slash >= 0 ? afterCredentials.slice(0, slash) : afterCredentials;
    const path = slash >= 0 ? afterCredentials.slice(slash + 1) : '';
    const nodes = hostList.split(',').map(parseNode);
    const colon = credentials.indexOf(':');
    const username = colon >= 0 ? decodeURIComponent(credentials.slice(0, colon)) : '';
    const password = colon >= 0 ? decodeURIComponent(credentials.slice(colon + 1)) : credentials ? decodeURIComponent(credentials) : '';
    const auth = { ...(username ? { username } : {}), ...(password ? { password } : {}) };
    if (cluster) {
      if (path !== '') throw new Error('a redis+cluster:// URL has no path (a cluster has one database)');
      return { kind: 'cluster', nodes, ...auth };
    }
    const [name, db = '0', ...extra] = path.split('/');
    if (!name) throw new Error('a redis+sentinel:// URL names the primary after the hosts: redis+sentinel://host:26379/mymaster');
    if (extra.length > 0 || !/^\d+$/.test(db)) throw new Error('a redis+sentinel:// URL ends with /masterName or /masterName/db');
    return { kind: 'sentinel', sentinels: nodes, name: decodeURIComponent(name), db: Number(db), ...auth };
  }
  const url = new URL(raw);
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') throw new Error('must be a URL like redis://127.0.0.1:6379');
  return { kind: 'single', url: raw };
}

function parseNode(node: string): RedisNode {
  const colon = node.lastIndexOf(':');
  const host = colon >= 0 ? node.slice(0, colon) : node;
  const port = colon >= 0 ? Number(node.slice(colon + 1)) : NaN;
  if (!host || !Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`"${node}" is not host:port`);
  return { host, port };
}
