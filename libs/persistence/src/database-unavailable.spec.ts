import { isDatabaseUnavailable } from './database-unavailable';

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('isDatabaseUnavailable', () => {
  it.each([
    ['a refused connection', withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')],
    ['a terminated backend (pg_terminate_backend)', withCode('terminating connection due to administrator command', '57P01')],
    ['a server starting up', withCode('the database system is starting up', '57P03')],
    ['a connection cut mid-query', new Error('Connection terminated unexpectedly')],
    ['a pool that could not connect in time', new Error('timeout exceeded when trying to connect')],
    ["Prisma's P1001", withCode("Can't reach database server", 'P1001')],
    ['a refused connection wrapped by the driver adapter', Object.assign(new Error('Invalid `prisma.session.findFirst()` invocation'), { cause: withCode('connect ECONNREFUSED', 'ECONNREFUSED') })],
    ['an AggregateError of both loopback addresses', Object.assign(new AggregateError([withCode('connect ECONNREFUSED ::1:5432', 'ECONNREFUSED')], ''), {})],
  ])('is true for %s', (_what, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it.each([
    ['a unique violation', withCode('duplicate key value violates unique constraint', '23505')],
    ['a syntax error', withCode('syntax error at or near "SELEC"', '42601')],
    ["Prisma's record not found", withCode('No record was found', 'P2025')],
    ['a plain bug', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['not an error', 'ECONNREFUSED'],
  ])('is false for %s', (_what, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});
