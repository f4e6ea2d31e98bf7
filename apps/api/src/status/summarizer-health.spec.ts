import type { WorkerHeartbeat } from '@compactor/jobs';
import { summarizerHealth } from './summarizer-health';

const remote = (llm: Partial<WorkerHeartbeat['llm']>, keyConfigured = true): Pick<WorkerHeartbeat, 'summarizer' | 'llm'> => ({
  summarizer: { provider: 'anthropic', model: 'claude-haiku-4-5', endpoint: 'https://api.anthropic.com', keyConfigured, timeoutMs: 60_000 },
  llm: { calls: 0, errors: 0, lastSuccessAt: null, lastErrorAt: null, lastError: null, ...llm },
});

describe('summarizerHealth', () => {
  it('calls the local summarizer healthy whatever happened', () => {
    const beat = remote({ lastErrorAt: '2026-11-23T10:00:00Z', lastError: { kind: 'unexpected', message: 'boom' } });
    expect(summarizerHealth({ ...beat, summarizer: { ...beat.summarizer, provider: 'local', endpoint: null } }).state).toBe('healthy');
  });

  it('is unknown before the first call, and says when no key is set', () => {
    expect(summarizerHealth(remote({}))).toEqual({ state: 'unknown', detail: 'No call yet since the worker started.' });
    expect(summarizerHealth(remote({}, false)).detail).toBe('No call yet; no provider key is set.');
  });

  it('follows the latest call: failing after an error, healthy again after an answer', () => {
    const lastError = { kind: 'rate-limited', message: 'HTTP 429 rate limited' };
    expect(summarizerHealth(remote({ lastErrorAt: '2026-11-23T10:00:05Z', lastError }))).toEqual({
      state: 'failing',
      detail: 'Last call failed: HTTP 429 rate limited (rate-limited).',
    });
    expect(summarizerHealth(remote({ lastSuccessAt: '2026-11-23T10:00:00Z', lastErrorAt: '2026-11-23T10:00:05Z', lastError })).state).toBe('failing');
    expect(summarizerHealth(remote({ lastSuccessAt: '2026-11-23T10:00:09Z', lastErrorAt: '2026-11-23T10:00:05Z', lastError })).state).toBe('healthy');
  });

  it('follows a probe of the models endpoint newer than the last call: healthy once the summarizer answers it, failing while it does not (issue #15)', () => {
    const lastError = { kind: 'network', message: 'connect ECONNREFUSED' };
    const failed = { lastErrorAt: '2026-11-23T10:00:05Z', lastError };
    expect(summarizerHealth(remote({ ...failed, probe: { state: 'up', at: '2026-11-23T10:00:09Z' } }))).toEqual({
      state: 'healthy',
      detail: 'Answered a probe of its models endpoint at 2026-11-23T10:00:09Z (last call failed: network).',
    });
    expect(summarizerHealth(remote({ ...failed, probe: { state: 'up', at: '2026-11-23T10:00:01Z' } })).state).toBe('failing');
    expect(summarizerHealth(remote({ ...failed, probe: { state: 'unknown', at: '2026-11-23T10:00:09Z' } })).state).toBe('failing');
    expect(summarizerHealth(remote({ lastSuccessAt: '2026-11-23T10:00:00Z', probe: { state: 'down', at: '2026-11-23T10:00:09Z' } })).state).toBe('failing');
  });
});
