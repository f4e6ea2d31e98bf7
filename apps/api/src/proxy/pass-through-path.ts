import { ProxyError } from './provider-errors';
import { upstreamUrl, withoutTrailingSlashes } from './upstream';

/**
 * The path a pass-through request takes on the upstream, which must stay under the upstream's base
 * path (F9): a segment that decodes to `.` or `..` (`%2e%2e`, which URL resolution treats as `..`),
 * or that hides a slash or backslash (`%2f`, `%5c`), is refused before anything is sent.
 */
export function passThroughPath(baseUrl: string, path: string): string {
  const query = path.indexOf('?');
  const pathname = query < 0 ? path : path.slice(0, query);
  for (const segment of pathname.split('/')) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      throw refused();
    }
    if (decoded === '.' || decoded === '..' || decoded.includes('/') || decoded.includes('\\')) throw refused();
  }
  // And whatever URL resolution makes of it, the result stays under the base path.
  const base = withoutTrailingSlashes(new URL(baseUrl).pathname);
  const resolved = upstreamUrl(baseUrl, path).pathname;
  if (resolved !== base && !resolved.startsWith(`${base}/`)) throw refused();
  return path;
}

function refused(): ProxyError {
  return new ProxyError(400, 'invalid_path', "Compactor proxy: a pass-through path may not leave the upstream's base path (no '.' or '..' segments, encoded or not, and no encoded slashes)");
}
