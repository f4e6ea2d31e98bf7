import { QueueUnavailable } from '@compactor/jobs';
import { UnrecoverableError } from 'bullmq';
import { JobFailure, JOB_FAILURES, jobFailure, jobFailureDetail, safeFailedReason } from './job-failure';

const INTERNAL = `internal-error: ${JOB_FAILURES['internal-error']}`;

describe('jobFailure', () => {
  it("names an unreachable database without the driver's text, keeping it as the cause", () => {
    const driver = Object.assign(new Error("Invalid `prisma.$queryRaw()` invocation:\n\nRaw query failed. Message: `Can't reach database server at 10.0.0.5:5432`"), { code: 'P1001' });
    const failure = jobFailure(driver);
    expect(failure).toBeInstanceOf(JobFailure);
    expect((failure as JobFailure).code).toBe('database-unavailable');
    expect(failure.message).toBe('database-unavailable: database unavailable');
    expect(failure.cause).toBe(driver);
    expect(jobFailure(failure)).toBe(failure);
    expect(jobFailureDetail(failure)).toContain('10.0.0.5:5432');
  });

  it('maps any other error to a stable code and fixed message; the raw text stays in the detail for the log', () => {
    const secret = 'sk-live-0123456789abcdef';
    const raw = new Error(`Invalid \`prisma.sessionLedger.findUnique()\` invocation: The table \`public.session_ledgers\` does not exist; upstream said {"key":"${secret}"}`);
    const failure = jobFailure(raw);
    expect(failure.message).toBe(INTERNAL);
    expect(failure.message).not.toContain(secret);
    expect(jobFailureDetail(failure)).toContain(secret);
    expect(jobFailure('a string').message).toBe(INTERNAL);
    expect(jobFailure(new TypeError("Cannot read properties of undefined (reading 'seq')")).message).toBe(INTERNAL);
  });

  it('names a Redis that did not take a job', () => {
    expect(jobFailure(new QueueUnavailable(new Error('Connection is closed. 10.0.0.7:6379'))).message).toBe(`queue-unavailable: ${JOB_FAILURES['queue-unavailable']}`);
  });

  it('keeps an unrecoverable error unrecoverable for BullMQ, naming the payload fields at fault', () => {
    const failure = jobFailure(new UnrecoverableError('Invalid payload for job "compact": sessionId: Required'));
    expect(failure.name).toBe('UnrecoverableError');
    // The registry's own text (the schema's field paths), which names no value.
    expect(failure.message).toBe('invalid-payload: Invalid payload for job "compact": sessionId: Required');
    expect(safeFailedReason(failure.message)).toBe(failure.message);
  });
});

describe('safeFailedReason', () => {
  it('keeps reasons already in code form and names BullMQ\'s own', () => {
    expect(safeFailedReason('database-unavailable: database unavailable')).toBe('database-unavailable: database unavailable');
    expect(safeFailedReason('job stalled more than allowable limit')).toBe('stalled: job stalled more than allowable limit');
    expect(safeFailedReason('Missing lock for job 42. moveToFinished')).toBe(`lock-lost: ${JOB_FAILURES['lock-lost']}`);
  });

  it('hides any other reason (raw text from an older worker, a look-alike code with other text)', () => {
    expect(safeFailedReason("connect ECONNREFUSED 10.0.0.5:5432")).toBe(INTERNAL);
    expect(safeFailedReason('database-unavailable: at 10.0.0.5:5432')).toBe(INTERNAL);
    expect(safeFailedReason('failed in the queue')).toBe(INTERNAL);
  });
});
