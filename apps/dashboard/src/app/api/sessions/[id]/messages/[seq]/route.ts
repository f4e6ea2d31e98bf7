import { apiCall } from '../../../../../../lib/session-api';
import { clientWithKey, readApiKey } from '../../../../../../server/api-key';

export const dynamic = 'force-dynamic';

const SESSION_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** One history message, whole and exactly as appended, for the page's "whole message" links. */
export async function GET(_request: Request, { params }: { params: Promise<{ id: string; seq: string }> }): Promise<Response> {
  const { id, seq: rawSeq } = await params;
  const seq = Number(rawSeq);
  if (!SESSION_ID.test(id) || !Number.isSafeInteger(seq) || seq < 1) return Response.json({ error: { message: 'Not found' } }, { status: 404 });
  const key = await readApiKey();
  if (!key) return Response.json({ error: { message: 'No API key: enter one in Settings' } }, { status: 401 });
  const result = await apiCall(() => clientWithKey(key).GET('/v1/sessions/{id}/messages', { params: { path: { id }, query: { after: seq - 1, limit: 1 } }, cache: 'no-store' }));
  if (!result.ok) {
    const status = { rejected: 401, forbidden: 403, 'not-found': 404, invalid: 400, unreachable: 502, failed: 502 }[result.failure.kind];
    return Response.json({ error: { message: result.failure.message } }, { status });
  }
  const message = result.data.messages.find((m) => m.seq === seq);
  if (!message) return Response.json({ error: { message: `No message ${seq} in session ${id}` } }, { status: 404 });
  return new Response(JSON.stringify(message, null, 2), { headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' } });
}
