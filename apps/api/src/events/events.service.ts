import { Injectable } from '@nestjs/common';
import { EventRecord, EventRepository, SessionRecord } from '@compactor/persistence';
import { SessionsService } from '../sessions/sessions.service';
import { EventPage, EventsQuery, EventView } from './events.dto';

export function toEventView(event: EventRecord): EventView {
  return {
    id: event.id.toString(),
    type: event.type,
    line: event.line,
    data: event.data ?? {},
    createdAt: event.createdAt.toISOString(),
  };
}

/** A session's events as JSON pages, keyset-paginated on the (session_id, id) index. */
@Injectable()
export class EventsService {
  constructor(
    private readonly sessions: SessionsService,
    private readonly events: EventRepository,
  ) {}

  /** The tenant's session, or 404 (another tenant's session answers the same). */
  session(tenantId: string, externalId: string): Promise<SessionRecord> {
    return this.sessions.require(tenantId, externalId);
  }

  async page(tenantId: string, externalId: string, query: EventsQuery): Promise<EventPage> {
    const session = await this.sessions.require(tenantId, externalId);
    // One row more than the page tells whether another page follows.
    const rows = await this.events.page({
      tenantId,
      sessionId: session.id,
      after: query.after,
      before: query.before,
      limit: query.limit + 1,
      types: query.type,
      order: query.order,
    });
    const page = rows.slice(0, query.limit);
    return {
      sessionId: session.externalId,
      events: page.map(toEventView),
      nextCursor: rows.length > query.limit ? page[page.length - 1].id.toString() : null,
    };
  }
}
