import type { Redis } from 'ioredis';

/**
 * Live session events across processes. A wake-up, not the payload: after a process commits a
 * session's events it publishes the latest id on the session's channel, and every API replica
 * with an SSE client on that session reads Postgres for the ids it has not sent yet. Redis
 * pub/sub delivers at most once, so a lost wake-up only delays delivery until the reader's
 * next wake-up (SSE streams also re-read on their heartbeat); nothing is read from the message.
 */
export function eventChannel(prefix: string, sessionId: string): string {
  return `${prefix}:events:${sessionId}`;
}

export interface EventWakeUp {
  /** The latest event id the publisher committed, when it knows it (a decimal string: ids are bigints). */
  id?: string;
}

/** Publishes wake-ups on a regular connection (the API's or the worker's). */
export class EventPublisher {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly onError: (error: Error) => void = () => undefined,
  ) {}

  /**
   * Wakes the session's SSE streams on every replica. Call after the events' transaction
   * committed. Fire and forget: the events are already in Postgres, so a request or job never
   * waits for, or fails because of, Redis here.
   */
  notify(sessionId: string, latestId?: bigint | null): void {
    const message: EventWakeUp = latestId === undefined || latestId === null ? {} : { id: latestId.toString() };
    this.redis.publish(eventChannel(this.prefix, sessionId), JSON.stringify(message)).then(
      () => (this.failing = false),
      (error: Error) => {
        // One report per outage, not one per wake-up.
        if (!this.failing) this.onError(error);
        this.failing = true;
      },
    );
  }

  /** True from a failed publish until one succeeds. */
  private failing = false;
}

/** Told that a session may have new events; `latestId` when the wake-up named one. */
export type EventListener = (latestId?: bigint) => void;

interface Subscription {
  listeners: Set<EventListener>;
  subscribed: Promise<unknown>;
  /** Whether Redis confirmed the SUBSCRIBE; a refused one (Redis was down) is sent again when the connection is ready. */
  state: 'pending' | 'confirmed' | 'refused';
}

/**
 * One subscriber connection per process (a subscribed connection can run no other command)
 * and the in-process fan-out from a session's channel to its listeners: the channel is
 * subscribed while the session has at least one listener.
 */
export class EventSubscriber {
  private connection?: Redis;
  private readonly subscriptions = new Map<string, Subscription>();
  private connectedOnce = false;

  constructor(
    private readonly connect: () => Redis,
    private readonly prefix: string,
    /** How long `listen` waits for Redis to confirm the subscription before it returns anyway. */
    private readonly subscribeTimeoutMs = 5000,
  ) {}

  /**
   * Adds a listener and resolves once the channel is subscribed, so a reader that queries
   * Postgres after this resolves misses no event committed later. While Redis is down it resolves
   * at once, and if Redis does not confirm in time it resolves anyway: readers fall back to their
   * own re-reads until the channel is subscribed (when Redis is back; the listener is then woken).
   * Returns the function that removes the listener.
   */
  async listen(sessionId: string, listener: EventListener): Promise<() => void> {
    const channel = eventChannel(this.prefix, sessionId);
    let subscription = this.subscriptions.get(sessionId);
    if (!subscription) {
      subscription = { listeners: new Set(), subscribed: Promise.resolve(), state: 'pending' };
      this.subscribe(channel, subscription);
      this.subscriptions.set(sessionId, subscription);
    }
    subscription.listeners.add(listener);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      subscription.subscribed.catch(() => undefined),
      new Promise((resolve) => (timer = setTimeout(resolve, this.subscribeTimeoutMs))),
    ]);
    clearTimeout(timer);
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      const current = this.subscriptions.get(sessionId);
      if (!current || !current.listeners.delete(listener) || current.listeners.size > 0) return;
      this.subscriptions.delete(sessionId);
      // Commands run in order on the one connection: a later SUBSCRIBE of the same channel lands after this.
      this.connection?.unsubscribe(channel).catch(() => undefined);
    };
  }

  /**
   * Sends the channel's SUBSCRIBE. A connection still opening gets it once ready (ioredis refuses
   * commands before that without an offline queue); one that is down refuses it at once, and the
   * 'ready' handler sends it again when Redis returns.
   */
  private subscribe(channel: string, subscription: Subscription): void {
    const connection = this.redis();
    subscription.state = 'pending';
    const opening = connection.status === 'wait' || connection.status === 'connecting' || connection.status === 'connect';
    const ready = opening
      ? new Promise<void>((resolve, reject) => {
          const done = (ok: boolean) => () => {
            connection.off('ready', onReady);
            connection.off('close', onClose);
            if (ok) resolve();
            else reject(new Error('Redis unreachable'));
          };
          const onReady = done(true);
          const onClose = done(false);
          connection.once('ready', onReady);
          connection.once('close', onClose);
        })
      : Promise.resolve();
    subscription.subscribed = ready
      .then(() => connection.subscribe(channel))
      .then(
        () => {
          subscription.state = 'confirmed';
        },
        (error: unknown) => {
          subscription.state = 'refused';
          throw error;
        },
      );
    subscription.subscribed.catch(() => undefined);
  }

  /** Whether the session's wake-ups arrive: its channel is subscribed on a connection that is up. */
  live(sessionId: string): boolean {
    return this.connection?.status === 'ready' && this.subscriptions.get(sessionId)?.state === 'confirmed';
  }

  /** Sessions with listeners in this process. */
  get sessions(): number {
    return this.subscriptions.size;
  }

  async close(): Promise<void> {
    this.subscriptions.clear();
    const connection = this.connection;
    this.connection = undefined;
    if (!connection) return;
    if (connection.status === 'ready') await connection.quit().catch(() => connection.disconnect());
    else connection.disconnect();
  }

  private redis(): Redis {
    if (this.connection) return this.connection;
    const connection = this.connect();
    connection.on('error', () => undefined);
    connection.on('message', (channel: string, message: string) => this.deliver(channel, message));
    // Wake-ups published while the connection was down are lost: after a reconnect every listener re-reads.
    // Channels whose SUBSCRIBE was refused meanwhile are subscribed now (ioredis re-subscribes only confirmed ones).
    connection.on('ready', () => {
      const reconnected = this.connectedOnce;
      this.connectedOnce = true;
      for (const [sessionId, s] of this.subscriptions) {
        const wake = () => {
          for (const l of [...s.listeners]) l();
        };
        if (s.state === 'refused') {
          // Re-read once subscribed, so nothing committed in between goes unannounced.
          this.subscribe(eventChannel(this.prefix, sessionId), s);
          s.subscribed.then(wake, () => undefined);
        } else if (reconnected) wake();
      }
    });
    this.connection = connection;
    return connection;
  }

  private deliver(channel: string, message: string): void {
    const head = `${this.prefix}:events:`;
    if (!channel.startsWith(head)) return;
    const subscription = this.subscriptions.get(channel.slice(head.length));
    if (!subscription) return;
    const latestId = parseLatestId(message);
    for (const listener of [...subscription.listeners]) listener(latestId);
  }
}

function parseLatestId(message: string): bigint | undefined {
  try {
    const id = (JSON.parse(message) as EventWakeUp).id;
    return typeof id === 'string' && /^\d{1,19}$/.test(id) ? BigInt(id) : undefined;
  } catch {
    return undefined;
  }
}
