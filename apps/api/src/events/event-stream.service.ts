import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { TooManyRequests } from '../errors/http-errors';
import { EventSubscriber } from '@compactor/jobs';
import { EventRecord, EventRepository, SessionRecord } from '@compactor/persistence';
import type { Response } from 'express';
import type { Logger } from 'pino';
import { once } from 'node:events';
import { API_CONFIG, ApiConfig } from '../config/api-config';
import { LOGGER } from '../logging/logger';
import { toEventView } from './events.service';

/** Rows read per query while catching up. */
const PAGE = 500;
/** How often a stream reads PostgreSQL while its Redis wake-ups cannot arrive. */
const OUTAGE_POLL_MS = 2000;

/** One SSE message; the type is a plain token, but a line break in it would end the field early. */
export function sseFrame(event: EventRecord): string {
  return `id: ${event.id}\nevent: ${event.type.replace(/[\r\n]/g, ' ')}\ndata: ${JSON.stringify(toEventView(event))}\n\n`;
}

/**
 * Serves a session's events as text/event-stream: subscribe to the session's wake-ups first,
 * then send every event after the client's last id, then whatever the wake-ups announce. One
 * read runs at a time per stream and always asks Postgres for "id > last sent", so the catch-up
 * and the live part never send an event twice or skip one (ids are handed out in commit order,
 * see EventRepository). A heartbeat comment keeps idle streams open and re-reads, in case a
 * wake-up was lost (Redis pub/sub delivers at most once); while Redis is down a stream polls
 * PostgreSQL every 2 s instead, and goes back to wake-ups when Redis returns.
 */
@Injectable()
export class EventStreamService implements OnModuleDestroy {
  private readonly open = new Set<() => void>();

  constructor(
    private readonly events: EventRepository,
    private readonly subscriber: EventSubscriber,
    @Inject(API_CONFIG) private readonly config: ApiConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Open streams in this process. */
  get streams(): number {
    return this.open.size;
  }

  /** Open streams per API key in this process. */
  private readonly perKey = new Map<string, number>();

  /**
   * Starts the stream and returns; the stream lives until the client disconnects, its key is revoked
   * or expires (checked at every heartbeat) or the app shuts down. A key already holding EVENTS_STREAMS_PER_KEY
   * streams gets a 429 before anything is sent.
   */
  async stream(res: Response, session: SessionRecord, lastId: bigint, types: string[] | undefined, key: { id: string; stillActive: () => Promise<boolean> }): Promise<void> {
    const held = this.perKey.get(key.id) ?? 0;
    if (held >= this.config.EVENTS_STREAMS_PER_KEY) {
      throw new TooManyRequests(`This API key already holds ${held} open event streams (EVENTS_STREAMS_PER_KEY); close one first`);
    }
    this.perKey.set(key.id, held + 1);
    let closed = false;
    let reading = false;
    let again = false;
    let unlisten: (() => void) | undefined;
    // Runs first after a full interval, when the stream is set up below.
    const heartbeat = setInterval(() => {
      // A revoked, expired (or deleted) key's streams end at the next beat.
      key.stillActive().then(
        (active) => {
          if (!active) close();
        },
        () => undefined,
      );
      void write(': heartbeat\n\n');
      wake();
    }, this.config.EVENTS_HEARTBEAT_MS);
    // While its wake-ups cannot arrive (Redis down, or not subscribed yet) the stream polls PostgreSQL instead.
    const poll = setInterval(() => {
      if (!this.subscriber.live(session.id)) wake();
    }, Math.min(OUTAGE_POLL_MS, this.config.EVENTS_HEARTBEAT_MS));

    const close = () => {
      if (closed) return;
      closed = true;
      clearInterval(heartbeat);
      clearInterval(poll);
      unlisten?.();
      this.open.delete(close);
      const left = (this.perKey.get(key.id) ?? 1) - 1;
      if (left > 0) this.perKey.set(key.id, left);
      else this.perKey.delete(key.id);
      if (!res.writableEnded) res.end();
    };
    // Backpressure: a slow client holds its own reads back, never the process's memory.
    const write = async (chunk: string) => {
      if (!closed && !res.write(chunk)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
    };
    const read = async (): Promise<void> => {
      if (reading) {
        again = true;
        return;
      }
      reading = true;
      try {
        do {
          again = false;
          for (;;) {
            const rows = await this.events.after(session.id, lastId, PAGE, types);
            for (const event of rows) {
              if (closed) return;
              await write(sseFrame(event));
              lastId = event.id;
            }
            if (rows.length < PAGE) break;
          }
        } while (again && !closed);
      } catch (error) {
        this.logger.warn({ err: error, session: session.externalId }, 'event stream read failed; closing the stream');
        close();
      } finally {
        reading = false;
      }
    };
    const wake = (latestId?: bigint) => {
      if (closed || (latestId !== undefined && latestId <= lastId)) return;
      void read();
    };

    res.status(200).set({
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      // Tells nginx-style proxies not to buffer the stream.
      'x-accel-buffering': 'no',
    });
    res.flushHeaders();
    res.socket?.setNoDelay(true);
    res.on('close', close);
    this.open.add(close);
    await write('retry: 2000\n\n');

    // Subscribed before the catch-up reads: an event committed after that read is announced.
    const remove = await this.subscriber.listen(session.id, wake);
    if (closed) remove();
    else unlisten = remove;
    await read();
  }

  onModuleDestroy(): Promise<void> {
    // Open streams would keep the HTTP server from closing.
    for (const close of [...this.open]) close();
    return this.subscriber.close();
  }
}
