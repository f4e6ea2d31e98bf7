/**
 * Whether an error means PostgreSQL cannot be reached or dropped the connection (restart,
 * failover, `pg_terminate_backend`, network), as opposed to a query or data error. Callers
 * answer these with 503 and `Retry-After`: the request is fine, the database is not there.
 *
 * Errors arrive from `pg` directly (`code`, message) or wrapped by Prisma's driver adapter
 * (`cause`, `meta.driverAdapterError`, P1001/P1017), so the whole chain is walked.
 */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
// SQLSTATE class 08 (connection exception), 57P01–57P03 (admin/crash shutdown, cannot connect now), 53300 (too many connections).
const SQLSTATES = /^(08\d{3}|57P0[123]|53300)$/;
// Prisma: can't reach the server, the server closed the connection, timed out fetching a connection.
const PRISMA_CODES = new Set(['P1001', 'P1002', 'P1017', 'P2024']);
const MESSAGES = [
  'Connection terminated',
  'terminating connection',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error',
  'Connection refused',
  'the database system is',
  "Can't reach database server",
  'Server has closed the connection',
  'DatabaseNotReachable',
  'ConnectionClosed',
];

export function isDatabaseUnavailable(error: unknown): boolean {
  const seen = new Set<unknown>();
  const queue: unknown[] = [error];
  while (queue.length > 0) {
    const e = queue.shift();
    if (typeof e !== 'object' || e === null || seen.has(e)) continue;
    seen.add(e);
    const { code, message, cause, errors, meta, kind } = e as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown; meta?: { driverAdapterError?: unknown }; kind?: unknown };
    if (typeof code === 'string' && (NETWORK_CODES.has(code) || SQLSTATES.test(code) || PRISMA_CODES.has(code))) return true;
    if (typeof kind === 'string' && (kind === 'DatabaseNotReachable' || kind === 'ConnectionClosed' || kind === 'SocketTimeout')) return true;
    if (typeof message === 'string' && MESSAGES.some((m) => message.includes(m))) return true;
    queue.push(cause, meta?.driverAdapterError, ...(Array.isArray(errors) ? errors : []));
  }
  return false;
}
