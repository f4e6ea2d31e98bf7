import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP relay on a loopback port in front of a real server (PostgreSQL, Redis), for outage
 * tests that must not touch the shared server: `down()` closes the port and cuts every open
 * connection (what a restart or failover looks like to a client), `up()` opens the same port
 * again. The server behind it keeps running for everybody else.
 */
export interface TcpRelay {
  readonly port: number;
  /** The target URL with its host and port replaced by the relay's. */
  urlFor(targetUrl: string): string;
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpRelay(target: { host: string; port: number }): Promise<TcpRelay> {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      const s = createServer((client) => {
        const upstream = connect(target.port, target.host);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => sockets.delete(socket));
          socket.on('error', () => undefined);
        }
        client.pipe(upstream).pipe(client);
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        server = s;
        resolve((s.address() as AddressInfo).port);
      });
    });
  const port = await listen(0);
  const down = async () => {
    const s = server;
    server = undefined;
    for (const socket of sockets) socket.destroy();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };
  return {
    port,
    urlFor(targetUrl: string) {
      const url = new URL(targetUrl);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      return url.toString();
    },
    down,
    up: async () => {
      if (!server) await listen(port);
    },
    close: down,
  };
}
