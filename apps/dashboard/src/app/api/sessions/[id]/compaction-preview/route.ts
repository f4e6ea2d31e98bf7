import { compactionPreview } from '../../../../../lib/compaction-preview';
import { apiCall } from '../../../../../lib/session-api';
import { clientWithKey, readApiKey } from '../../../../../server/api-key';

export const dynamic = 'force-dynamic';

const SESSION_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** The API waits up to its DRY_RUN_TIMEOUT_MS (60 s by default) and then answers with the unfinished job; this is the backstop. */
const PREVIEW_TIMEOUT_MS = 90_000;

const FAILURE_STATUS = { rejected: 401, forbidden: 403, 'not-found': 404, invalid: 400, unreachable: 502, failed: 502 } as const;

function problem(status: number, message: string): Response {
  return Response.json({ error: { message } }, { status, headers: { 'cache-control': 'no-store' } });
}

/**
 * The preview of "Compact now": a dry run of the session's compaction, shaped for the dialog. A
 * Route Handler rather than a Server Action because Next.js runs a page's Server Actions and
 * router refreshes one at a time: a dry run that waits for a worker would hold up the live
 * events' refreshes and the page's other buttons. Closing the dialog aborts the request.
 */
export async function POST(request: Request, { params }: { params: Promise<{ id: string }> }): Promise<Response> {
  const { id } = await params;
  if (!SESSION_ID.test(id)) return problem(404, 'No such session.');
  const key = await readApiKey();
  if (!key) return problem(401, 'No API key: enter one in Settings.');
  const signal = AbortSignal.any([request.signal, AbortSignal.timeout(PREVIEW_TIMEOUT_MS)]);
  const result = await apiCall(() =>
    clientWithKey(key).POST('/v1/sessions/{id}/compact', { params: { path: { id } }, body: { dryRun: true, format: 'canonical' }, signal, cache: 'no-store' }),
  );
  if (!result.ok) {
    if (request.signal.aborted) return new Response(null, { status: 499 });
    if (signal.aborted) return problem(504, 'The preview did not finish in time. Try again later, or compact without a preview.');
    return problem(FAILURE_STATUS[result.failure.kind], result.failure.message);
  }
  return Response.json({ preview: compactionPreview(result.data) }, { headers: { 'cache-control': 'no-store' } });
}
