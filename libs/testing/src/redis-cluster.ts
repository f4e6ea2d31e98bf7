import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './free-port';

/** Private Redis topologies on loopback ports (Debian's redis-server, nothing persisted), for the Cluster and Sentinel tests. */
export interface TestRedisTopology {
  /** REDIS_URL for the apps: redis+cluster://… or redis+sentinel://… */
  readonly url: string;
  stop(): Promise<void>;
}


async function waitForPing(port: number, deadlineMs = 10_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
    probe.on('error', () => undefined);
    const ok = await probe
      .connect()
      .then(() => probe.ping())
      .then(() => true)
      .catch(() => false);
    probe.disconnect();
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer within ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function stopAll(children: ChildProcess[], dir: string): Promise<void> {
  await Promise.all(
    children.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          c.once('exit', () => resolve());
          c.kill('SIGTERM');
        }),
    ),
  );
  rmSync(dir, { recursive: true, force: true });
}

/** A Redis Cluster of `nodes` primaries (no replicas), its slots spread by `redis-cli --cluster create`, ready (cluster_state:ok on every node). */
export async function startRedisCluster(nodes = 3): Promise<TestRedisTopology> {
  const dir = mkdtempSync(path.join(tmpdir(), 'redis-cluster-'));
  const ports: number[] = [];
  const children: ChildProcess[] = [];
  try {
    for (let i = 0; i < nodes; i++) {
      const port = await freePort();
      ports.push(port);
      children.push(
        spawn(
          'redis-server',
          ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, `nodes-${port}.conf`), '--dir', dir],
          { stdio: 'ignore' },
        ),
      );
    }
    for (const port of ports) await waitForPing(port);
    const created = spawnSync('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], { encoding: 'utf8', timeout: 30_000 });
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
    // Every node must agree the cluster is up before the apps connect.
    const deadline = Date.now() + 20_000;
    for (const port of ports) {
      for (;;) {
        const node = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 0 });
        node.on('error', () => undefined);
        const info = await node.cluster('INFO').catch(() => '');
        node.disconnect();
        if (String(info).includes('cluster_state:ok')) break;
        if (Date.now() > deadline) throw new Error(`Redis Cluster node ${port} did not reach cluster_state:ok`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } catch (error) {
    await stopAll(children, dir);
    throw error;
  }
  return { url: `redis+cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`, stop: () => stopAll(children, dir) };
}

/** A Redis primary watched by one Sentinel (quorum 1) under the name `mymaster`; the URL names the Sentinel only. */
export async function startRedisSentinel(name = 'mymaster'): Promise<TestRedisTopology> {
  const dir = mkdtempSync(path.join(tmpdir(), 'redis-sentinel-'));
  const children: ChildProcess[] = [];
  try {
    const primary = await freePort();
    children.push(spawn('redis-server', ['--port', String(primary), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' }));
    await waitForPing(primary);
    const sentinel = await freePort();
    // Sentinel rewrites its configuration file, so it gets one of its own.
    const conf = path.join(dir, 'sentinel.conf');
    writeFileSync(conf, `port ${sentinel}\nbind 127.0.0.1\ndir ${dir}\nsentinel monitor ${name} 127.0.0.1 ${primary} 1\n`);
    children.push(spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' }));
    await waitForPing(sentinel);
    // Sentinel answers once it knows the primary.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const probe = new Redis(sentinel, '127.0.0.1', { maxRetriesPerRequest: 0 });
      probe.on('error', () => undefined);
      const addr = (await probe.call('SENTINEL', 'get-master-addr-by-name', name).catch(() => null)) as string[] | null;
      probe.disconnect();
      if (addr && Number(addr[1]) === primary) break;
      if (Date.now() > deadline) throw new Error(`Sentinel on ${sentinel} does not know ${name}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return { url: `redis+sentinel://127.0.0.1:${sentinel}/${name}`, stop: () => stopAll(children, dir) };
  } catch (error) {
    await stopAll(children, dir);
    throw error;
  }
}
