import { createServer, get, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpDrain } from './http-drain';

/** A loopback server whose `/slow` requests wait for `release()` and whose `/events` is an open event stream. */
async function serve() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let arrived!: () => void;
  const arrival = new Promise<void>((resolve) => (arrived = resolve));
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/events') {
      res.setHeader('content-type', 'text/event-stream; charset=utf-8'); // as Express's res.set does
      res.writeHead(200);
      res.write('retry: 2000\n\n');
      arrived();
      return;
    }
    arrived();
    void released.then(() => res.end('done'));
  });
  const drain = new HttpDrain(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const fetchText = (path: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
        let body = '';
        res.on('data', (d) => (body += String(d)));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      }).on('error', reject);
    });
  return { server, drain, release, arrival, fetchText };
}

describe('HttpDrain', () => {
  it('waits for the requests in flight before it resolves, and takes no new connection meanwhile', async () => {
    const { drain, release, arrival, fetchText } = await serve();
    const slow = fetchText('/slow');
    await arrival;
    let drained: boolean | undefined;
    const done = drain.drain(5_000).then((ok) => (drained = ok));
    await new Promise((resolve) => setImmediate(resolve));
    expect(drained).toBeUndefined();
    await expect(fetchText('/slow')).rejects.toThrow(/ECONNREFUSED/);
    release();
    expect(await slow).toEqual({ status: 200, body: 'done' });
    await done;
    expect(drained).toBe(true);
  });

  it('does not wait for an event stream (the app closes those itself)', async () => {
    const { server, drain, arrival, fetchText } = await serve();
    try {
      void fetchText('/events').catch(() => undefined);
      await arrival;
      expect(drain.busy()).toBe(0);
      expect(await drain.drain(5_000)).toBe(true);
    } finally {
      server.close();
      server.closeAllConnections();
    }
  });

  it('gives up after its deadline when a request never ends', async () => {
    const { server, drain, arrival, fetchText } = await serve();
    try {
      void fetchText('/slow').catch(() => undefined);
      await arrival;
      expect(await drain.drain(50)).toBe(false);
    } finally {
      server.closeAllConnections();
    }
  });
});
