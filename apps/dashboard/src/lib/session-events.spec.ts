import { compareEventIds, eventTone, latestEventId, mergeEvents, parseEventView, runningCompaction, type EventView } from './session-events';

const ev = (id: number, type: string, jobId?: string, line = `${type} ${id}`): EventView => ({ id: String(id), type, line, data: jobId ? { jobId } : {}, createdAt: `2026-11-23T14:00:${String(id).padStart(2, '0')}.000Z` });

describe('events', () => {
  it('parses a streamed event and refuses anything that is not one', () => {
    expect(parseEventView({ id: '12', type: 'compressed', line: 'Compacted', data: { jobId: 'j' }, createdAt: '2026-11-23T14:00:00Z' })).toEqual({
      id: '12',
      type: 'compressed',
      line: 'Compacted',
      data: { jobId: 'j' },
      createdAt: '2026-11-23T14:00:00Z',
    });
    expect(parseEventView({ id: 12, type: 'x', line: '', data: {}, createdAt: '' })).toBeNull();
    expect(parseEventView('compressed')).toBeNull();
    expect(parseEventView({ id: '1', type: 'x', line: 'l', createdAt: 'c', data: 'oops' })?.data).toEqual({});
  });

  it('orders bigint ids numerically, newest first, once each', () => {
    expect(compareEventIds('9', '10')).toBeLessThan(0);
    const merged = mergeEvents([ev(10, 'a'), ev(9, 'b')], [ev(11, 'c'), ev(10, 'a')], 3);
    expect(merged.map((e) => e.id)).toEqual(['11', '10', '9']);
    expect(mergeEvents(merged, [ev(12, 'd')], 3).map((e) => e.id)).toEqual(['12', '11', '10']);
    expect(latestEventId([ev(9, 'a'), ev(100, 'b'), ev(11, 'c')])).toBe('100');
    expect(latestEventId([])).toBeNull();
  });

  it('knows a compaction is running until its job reports an outcome', () => {
    const started = [ev(3, 'compaction-progress', 'j2', 'Summarizing 27 messages'), ev(2, 'compaction-started', 'j2'), ev(1, 'compressed', 'j1')];
    expect(runningCompaction(started)).toEqual({ jobId: 'j2', line: 'Summarizing 27 messages', startedAt: '2026-11-23T14:00:02.000Z' });
    expect(runningCompaction([ev(4, 'compression-skipped', 'j2'), ...started])).toBeNull();
    expect(runningCompaction([ev(1, 'snapshot-created')])).toBeNull();
  });

  it('gives each type a tone', () => {
    expect(['compaction-progress', 'compressed', 'compression-skipped', 'compression-error', 'snapshot-created'].map(eventTone)).toEqual(['progress', 'ok', 'warn', 'bad', 'info']);
  });
});
