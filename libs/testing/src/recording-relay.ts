import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One exchange that went through a RecordingRelay. */
export interface RelayedExchange {
  index: number;
  method: string;
  /** Path and query, as the client sent them. */
  url: string;
  /** The client's headers (lower case), credentials replaced by `[redacted]`. */
  requestHeaders: Record<string, string>;
  /** The request body, parsed when it is JSON (the raw text otherwise; undefined when empty). */
  body: unknown;
  /** Set once the target answered. */
  status?: number;
  responseHeaders?: Record<string, string>;
  /** The response body's text, once it ended. */
  responseBody?: string;
  /** Set when the exchange failed (the target unreachable, a connection cut). */
  error?: string;
}

export interface RecordingRelay {
  /** `http://127.0.0.1:<port>`: point the client here instead of at the target. */
  readonly url: string;
  /** Every exchange, in order of arrival. */
  readonly exchanges: RelayedExchange[];
  close(): Promise<void>;
}

const SECRETS = new Set(['authorization', 'proxy-authorization', 'x-api-key', 'api-key', 'cookie', 'set-cookie', 'x-compactor-key']);

function flat(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name] = SECRETS.has(name) ? '[redacted]' : Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/**
 * A transparent HTTP relay on 127.0.0.1 between a client whose traffic a test cannot otherwise
 * see (a CLI such as Claude Code) and the server it talks to: requests and answers pass through
 * unchanged (streamed answers as they come), and each exchange is recorded, so a test can assert
 * on the response headers the client received and on what the client sent.
 */
export async function startRecordingRelay(target: string): Promise<RecordingRelay> {
  const base = new URL(target);
  const exchanges: RelayedExchange[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let body: unknown;
      if (raw.length > 0) {
        try {
          body = JSON.parse(raw.toString('utf8'));
        } catch {
          body = raw.toString('utf8');
        }
      }
      const exchange: RelayedExchange = { index: exchanges.length, method: req.method ?? 'GET', url: req.url ?? '/', requestHeaders: flat(req.headers), body };
      exchanges.push(exchange);
      const headers = { ...req.headers, host: base.host };
      const upstream = httpRequest(
        { protocol: base.protocol, hostname: base.hostname, port: base.port, method: req.method, path: `${base.pathname.replace(/\/+$/, '')}${req.url ?? '/'}`, headers },
        (answer) => {
          exchange.status = answer.statusCode;
          exchange.responseHeaders = flat(answer.headers);
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          const received: Buffer[] = [];
          answer.on('data', (c: Buffer) => {
            received.push(c);
            res.write(c);
          });
          answer.on('end', () => {
            exchange.responseBody = Buffer.concat(received).toString('utf8');
            res.end();
          });
          answer.on('error', (error) => {
            exchange.error = error.message;
            res.destroy();
          });
        },
      );
      upstream.on('error', (error) => {
        exchange.error = error.message;
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `relay: ${error.message}` } }));
      });
      upstream.end(raw);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    exchanges,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
