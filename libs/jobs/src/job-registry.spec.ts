import { UnrecoverableError } from 'bullmq';
import { JobName } from './job-names';
import { JobRegistry, JobRegistryError } from './job-registry';

const handler = (result: unknown = 'done') => jest.fn(async () => result);
/** Every other job needs a handler too, or the registry refuses to start. */
const others = [
  { name: JobName.Compact, source: 'Compact.run', handler: handler('compacted') },
  { name: JobName.ExpireIdleSessions, source: 'Retention.run', handler: handler('expired') },
];

describe('JobRegistry', () => {
  it('refuses a job with no handler', () => {
    expect(() => new JobRegistry([])).toThrow(JobRegistryError);
    expect(() => new JobRegistry([])).toThrow(`job "${JobName.ExpireIdempotencyRecords}" has no handler`);
  });

  it('refuses a job with two handlers and names both', () => {
    const make = () =>
      new JobRegistry([
        { name: JobName.ExpireIdempotencyRecords, source: 'A.run', handler: handler() },
        { name: JobName.ExpireIdempotencyRecords, source: 'B.run', handler: handler() },
        ...others,
      ]);
    expect(make).toThrow('has 2 handlers: A.run, B.run');
  });

  it('refuses a handler for a job name that does not exist', () => {
    const make = () =>
      new JobRegistry([
        { name: JobName.ExpireIdempotencyRecords, source: 'A.run', handler: handler() },
        { name: 'bogus' as JobName, source: 'C.run', handler: handler() },
        ...others,
      ]);
    expect(make).toThrow('C.run handles unknown job "bogus"');
  });

  it('parses the payload before calling the handler', async () => {
    const run = handler('ok');
    const registry = new JobRegistry([{ name: JobName.ExpireIdempotencyRecords, source: 'A.run', handler: run }, ...others]);
    await expect(registry.dispatch(JobName.ExpireIdempotencyRecords, { olderThanHours: 24 })).resolves.toBe('ok');
    expect(run).toHaveBeenCalledWith({ olderThanHours: 24 }, {});
  });

  it('fails an invalid payload without retry, naming the field', async () => {
    const run = handler();
    const registry = new JobRegistry([{ name: JobName.ExpireIdempotencyRecords, source: 'A.run', handler: run }, ...others]);
    const attempt = registry.dispatch(JobName.ExpireIdempotencyRecords, { olderThanHours: -1 });
    await expect(attempt).rejects.toBeInstanceOf(UnrecoverableError);
    await expect(registry.dispatch(JobName.ExpireIdempotencyRecords, {})).rejects.toThrow('olderThanHours');
    expect(run).not.toHaveBeenCalled();
  });

  it('rethrows handler errors so BullMQ retries', async () => {
    const failing = jest.fn(async () => {
      throw new Error('db down');
    });
    const registry = new JobRegistry([{ name: JobName.ExpireIdempotencyRecords, source: 'A.run', handler: failing }, ...others]);
    const attempt = registry.dispatch(JobName.ExpireIdempotencyRecords, { olderThanHours: 1 });
    await expect(attempt).rejects.toThrow('db down');
    await expect(registry.dispatch(JobName.ExpireIdempotencyRecords, { olderThanHours: 1 })).rejects.not.toBeInstanceOf(
      UnrecoverableError,
    );
  });
});
