import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from './free-port';
import { Redis } from 'ioredis';

/**
 * A redis-server of a test's own on a free loopback port (Debian's `redis-server`, nothing
 * persisted), for outage tests that stop and start Redis without touching the shared one.
 * `start()` after `stop()` brings back an empty server on the same port: a restart that lost its data.
 */
export interface TestRedisServer {
  readonly port: number;
  readonly url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
}


export async function startRedisServer(): Promise<TestRedisServer> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const start = async () => {
    if (child) return;
    const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    child = proc;
    const deadline = Date.now() + 10_000;
    for (;;) {
      const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
      probe.on('error', () => undefined);
      const ok = await probe
        .connect()
        .then(() => probe.ping())
        .then(() => true)
        .catch(() => false);
      probe.disconnect();
      if (ok) return;
      if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`redis-server on port ${port} did not start`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const stop = async () => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill('SIGKILL');
    await exited;
  };
  await start();
  return { port, url, stop, start };
}
