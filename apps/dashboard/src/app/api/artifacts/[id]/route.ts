import { errorMessage } from '../../../../lib/session-api';
import { clientWithKey, readApiKey } from '../../../../server/api-key';

export const dynamic = 'force-dynamic';

const ARTIFACT_ID = /^[A-Za-z0-9_-]{1,100}$/;

/**
 * An offloaded tool output, read with the key from the httpOnly cookie. Tool output is
 * untrusted: whatever its media type, it is served as plain text (or as a download), never as
 * HTML on the dashboard's origin.
 */
export async function GET(_request: Request, { params }: { params: Promise<{ id: string }> }): Promise<Response> {
  const { id } = await params;
  if (!ARTIFACT_ID.test(id)) return Response.json({ error: { message: 'Not found' } }, { status: 404 });
  const key = await readApiKey();
  if (!key) return Response.json({ error: { message: 'No API key: enter one in Settings' } }, { status: 401 });

  let result;
  try {
    result = await clientWithKey(key).GET('/v1/artifacts/{id}', { params: { path: { id } }, parseAs: 'arrayBuffer', cache: 'no-store' });
  } catch (error) {
    return Response.json({ error: { message: `The API did not answer: ${error instanceof Error ? error.message : String(error)}` } }, { status: 502 });
  }
  const upstream = result.response;
  if (!upstream.ok || result.data === undefined) {
    return Response.json({ error: { message: errorMessage(result.error) ?? `The API answered HTTP ${upstream.status}` } }, { status: upstream.status === 200 ? 502 : upstream.status });
  }
  const mediaType = (upstream.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
  const text = mediaType.startsWith('text/') || mediaType === 'application/json' || mediaType === '';
  const headers = new Headers({
    'content-type': text ? 'text/plain; charset=utf-8' : 'application/octet-stream',
    'content-disposition': text ? 'inline' : `attachment; filename="${id}"`,
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; sandbox",
    'cache-control': 'private, no-store',
  });
  for (const name of ['x-compactor-session', 'x-compactor-seq', 'x-content-sha256', 'x-total-bytes']) {
    const value = upstream.headers.get(name);
    if (value) headers.set(name, value);
  }
  return new Response(result.data, { status: 200, headers });
}
