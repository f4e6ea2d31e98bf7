import { apiCall, failureFromStatus } from './session-api';

const response = (status: number) => new Response(null, { status });

describe('apiCall', () => {
  it('hands back the data of a 2xx answer', async () => {
    await expect(apiCall(async () => ({ data: { a: 1 }, response: response(200) }))).resolves.toEqual({ ok: true, data: { a: 1 } });
  });

  it.each([
    [401, 'rejected'],
    [403, 'forbidden'],
    [404, 'not-found'],
    [409, 'invalid'],
    [500, 'failed'],
  ] as const)('folds HTTP %i into "%s", with the API message', async (status, kind) => {
    const result = await apiCall(async () => ({ error: { error: { code: 'x', message: `message ${status}` } }, response: response(status) }));
    expect(result).toEqual({ ok: false, failure: { kind, message: `message ${status}.` } });
  });

  it('says the API did not answer, naming the socket error', async () => {
    const error = new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3199'), { code: 'ECONNREFUSED' }) });
    const result = await apiCall(async () => {
      throw error;
    });
    expect(result).toEqual({ ok: false, failure: { kind: 'unreachable', message: 'The API did not answer: connect ECONNREFUSED 127.0.0.1:3199.' } });
  });

  it('has words for an error without the envelope', () => {
    expect(failureFromStatus(401, 'nope')).toEqual({ kind: 'rejected', message: 'The API rejected the key.' });
  });
});
