import type { Server, ServerResponse } from 'node:http';

/**
 * Lets an API that is stopping (SIGTERM, SIGINT: a deploy, a scale-down) answer the requests it
 * already took before its modules close the database pool and Redis. Nest's `app.close()` runs the
 * modules' destroy hooks first and closes the HTTP server last, so a request in flight met a pool
 * that had ended and answered 500 (docs/reliability.md "A stopped API").
 */
export class HttpDrain {
  private readonly open = new Set<ServerResponse>();
  private settled?: () => void;

  constructor(private readonly server: Server) {
    server.on('request', (_req, res: ServerResponse) => {
      this.open.add(res);
      res.once('close', () => {
        this.open.delete(res);
        if (this.busy() === 0) this.settled?.();
      });
    });
  }

  /** Requests in flight that the drain waits for: event streams never end by themselves, so they are not counted. */
  busy(): number {
    let n = 0;
    for (const res of this.open) if (!isEventStream(res)) n += 1;
    return n;
  }

  /**
   * Stops taking connections and resolves once every request in flight was answered (event streams
   * aside: the app's shutdown closes them), or after `timeoutMs`; then closes the keep-alive
   * connections left idle. Resolves whether everything was answered in time.
   */
  async drain(timeoutMs: number): Promise<boolean> {
    this.server.close();
    this.server.closeIdleConnections();
    const answered = await new Promise<boolean>((resolve) => {
      if (this.busy() === 0) return resolve(true);
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.settled = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
    this.server.closeIdleConnections();
    return answered;
  }
}

function isEventStream(res: ServerResponse): boolean {
  return String(res.getHeader('content-type') ?? '').startsWith('text/event-stream');
}
