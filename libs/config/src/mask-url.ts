/** A connection URL safe to print: the password (and a lone user token) is replaced by ***. */
export function maskUrl(raw: string): string {
  // redis+cluster:// and redis+sentinel:// name several hosts, which URL cannot parse: mask what precedes the last '@'.
  const multi = /^redis\+(cluster|sentinel):\/\//.exec(raw);
  if (multi) {
    const rest = raw.slice(multi[0].length);
    const at = rest.lastIndexOf('@');
    return at >= 0 ? `${multi[0]}***@${rest.slice(at + 1)}` : raw;
  }
  try {
    const url = new URL(raw);
    if (url.password) url.password = '***';
    else if (url.username && url.protocol.startsWith('redis')) url.username = '***';
    return url.toString();
  } catch {
    return '<unparseable URL>';
  }
}
