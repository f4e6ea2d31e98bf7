import { EXPORT_PAGE, nextExportPage } from './snapshots.service';

describe('nextExportPage', () => {
  it('reads about 2 M characters of messages per page: many small ones, few large ones, at least one, at most EXPORT_PAGE', () => {
    expect(nextExportPage(100, 100 * 200)).toBe(EXPORT_PAGE);
    expect(nextExportPage(100, 100 * 4_000)).toBe(500);
    expect(nextExportPage(500, 500 * 100_000)).toBe(20);
    expect(nextExportPage(20, 20 * 30_000_000)).toBe(1);
    expect(nextExportPage(0, 0)).toBe(EXPORT_PAGE);
  });
});
