/** A connection URL safe to print: the password (and a lone user token) is replaced by ***. */
export function maskUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password) url.password = '***';
    else if (url.username && url.protocol.startsWith('redis')) url.username = '***';
    return url.toString();
  } catch {
    return '<unparseable URL>';
  }
}
