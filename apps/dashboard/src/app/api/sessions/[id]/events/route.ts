import type { NextRequest } from 'next/server';
import { errorMessage } from '../../../../../lib/session-api';
import { sseRelayTransform } from '../../../../../lib/session-sse';
import { clientWithKey, readApiKey } from '../../../../../server/api-key';

export const dynamic = 'force-dynamic';

const SESSION_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const EVENT_ID = /^\d{1,20}$/;

function problem(status: number, message: string): Response {
  return Response.json({ error: { message } }, { status, headers: { 'cache-control': 'no-store' } });
}

/**
 * The session's live events for the browser's EventSource: opens the API's SSE stream with the
 * key from the httpOnly cookie and relays it on the same origin. The browser's Last-Event-ID
 * (sent on every reconnect) passes through, so a dropped stream resumes where it stopped;
 * closing the page aborts the upstream request.
 */
export async function GET(request: NextRequest, { params }: { params: Promise<{ id: string }> }): Promise<Response> {
  const { id } = await params;
  if (!SESSION_ID.test(id)) return problem(404, 'No such session');
  const key = await readApiKey();
  if (!key) return problem(401, 'No API key: enter one in Settings');

  const lastEventId = request.headers.get('last-event-id') ?? undefined;
  const after = request.nextUrl.searchParams.get('after') ?? undefined;
  let upstream: Response;
  try {
    const result = await clientWithKey(key).GET('/v1/sessions/{id}/events', {
      params: {
        path: { id },
        query: after && EVENT_ID.test(after) ? { after } : {},
        header: lastEventId && EVENT_ID.test(lastEventId) ? { 'Last-Event-ID': lastEventId } : {},
      },
      headers: { Accept: 'text/event-stream' },
      parseAs: 'stream',
      signal: request.signal,
      cache: 'no-store',
    });
    upstream = result.response;
    if (!upstream.ok || !result.data) {
      return problem(upstream.status === 200 ? 502 : upstream.status, errorMessage(result.error) ?? `The API answered HTTP ${upstream.status}`);
    }
    return new Response(result.data.pipeThrough(sseRelayTransform()), {
      status: 200,
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        // no-transform keeps the server's compression from buffering the stream.
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      },
    });
  } catch (error) {
    if (request.signal.aborted) return new Response(null, { status: 499 });
    return problem(502, `The API did not answer: ${error instanceof Error ? error.message : String(error)}`);
  }
}
