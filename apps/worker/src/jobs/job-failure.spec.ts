import { DatabaseUnavailableForJob, jobFailure } from './job-failure';

describe('jobFailure', () => {
  it("names an unreachable database without the driver's text, keeping it as the cause", () => {
    const driver = Object.assign(new Error("Invalid `prisma.$queryRaw()` invocation:\n\nRaw query failed. Message: `Can't reach database server at 10.0.0.5:5432`"), { code: 'P1001' });
    const failure = jobFailure(driver);
    expect(failure).toBeInstanceOf(DatabaseUnavailableForJob);
    expect((failure as Error).message).toBe('database unavailable');
    expect((failure as Error).cause).toBe(driver);
    expect(jobFailure(failure)).toBe(failure);
  });

  it('passes other errors as they are', () => {
    const error = new Error('session payload invalid');
    expect(jobFailure(error)).toBe(error);
    expect(jobFailure('a string')).toBe('a string');
  });
});
