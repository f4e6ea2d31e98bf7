import { QueueUnavailable } from '@compactor/jobs';
import { isDatabaseUnavailable } from '@compactor/persistence';

/**
 * The stable codes a failed job's row (and BullMQ's failed reason) can carry, each with its fixed
 * short message: `<code>: <message>`. Tenants read them on `GET /v1/jobs/:id` and the dashboard,
 * so they never hold a driver's text, an upstream body or a secret; the worker's log keeps those.
 */
export const JOB_FAILURES = {
  'database-unavailable': 'database unavailable',
  'queue-unavailable': 'the job queue (Redis) could not be reached',
  stalled: 'job stalled more than allowable limit',
  'lock-lost': 'the job lost its lock to another worker',
  'invalid-payload': 'the job payload was invalid',
  'internal-error': 'the compaction failed unexpectedly; the worker log has the detail',
} as const;

export type JobFailureCode = keyof typeof JOB_FAILURES;

/** A job attempt that failed, named by its code; the original error is its cause (logged, never stored). */
export class JobFailure extends Error {
  constructor(
    readonly code: JobFailureCode,
    cause: unknown,
    /** Replaces the fixed message; only text of our own (the payload schema's field problems). */
    message: string = JOB_FAILURES[code],
  ) {
    super(`${code}: ${message}`, { cause });
    this.name = 'JobFailure';
  }
}

/** The registry's refusals of a job (see JobRegistry.dispatch). */
const PAYLOAD_MESSAGE = /^(Invalid payload|No handler) for job /;
const PAYLOAD_REASON = /^invalid-payload: (Invalid payload|No handler) for job /;

/** Errors whose name says what failed, by class name (BullMQ's errors come from another package's realm). */
function codeOf(error: unknown): JobFailureCode {
  if (isDatabaseUnavailable(error)) return 'database-unavailable';
  if (error instanceof QueueUnavailable) return 'queue-unavailable';
  const name = error instanceof Error ? error.name : undefined;
  if (name === 'UnrecoverableError' && PAYLOAD_MESSAGE.test((error as Error).message)) return 'invalid-payload';
  return 'internal-error';
}

/**
 * The error a failed job attempt hands to BullMQ, whose message becomes the job's failed reason
 * and the compaction row's error: a stable code and its fixed message (`JOB_FAILURES`). The
 * worker logs the original (`jobFailureDetail`). BullMQ's UnrecoverableError keeps its class, so
 * BullMQ still makes no further attempt.
 */
export function jobFailure(error: unknown): Error {
  if (error instanceof JobFailure) return error;
  const code = codeOf(error);
  // The registry's own text: the job's name and the schema's field paths and problems, never a value.
  const failure = code === 'invalid-payload' ? new JobFailure(code, error, (error as Error).message) : new JobFailure(code, error);
  if (error instanceof Error && error.name === 'UnrecoverableError') failure.name = 'UnrecoverableError';
  return failure;
}

/** The original error's text, for the worker's log only. */
export function jobFailureDetail(error: unknown): string {
  const original = error instanceof JobFailure ? error.cause : error;
  return original instanceof Error ? `${original.name}: ${original.message}` : String(original);
}

/** Reasons BullMQ itself writes (outside our handler), by their fixed text. */
const BULLMQ_REASONS: Array<[string, JobFailureCode]> = [
  ['job stalled more than allowable limit', 'stalled'],
  ['Missing lock for job', 'lock-lost'],
];

/**
 * What a row may say of a job BullMQ failed (the sweep closes such rows with it): a reason already
 * in `<code>: <message>` form stays; BullMQ's own fixed reasons get their code; anything else (a
 * reason written by an older worker, raw) becomes `internal-error`.
 */
export function safeFailedReason(reason: string): string {
  for (const [code, message] of Object.entries(JOB_FAILURES)) if (reason === `${code}: ${message}`) return reason;
  if (PAYLOAD_REASON.test(reason)) return reason;
  for (const [text, code] of BULLMQ_REASONS) if (reason.startsWith(text)) return `${code}: ${JOB_FAILURES[code]}`;
  return `internal-error: ${JOB_FAILURES['internal-error']}`;
}
