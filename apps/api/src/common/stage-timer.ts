/**
 * Stage durations of one request, as a Server-Timing header: the first entry (`total`) is the whole
 * span measured, then each stage in order. Clients and the benchmarks read it.
 */
export class StageTimer {
  private readonly started = performance.now();
  private last = this.started;
  private readonly stages: string[] = [];

  constructor(
    private readonly total: string,
    private readonly description: string,
  ) {}

  mark(stage: string): void {
    const now = performance.now();
    this.stages.push(`${stage};dur=${(now - this.last).toFixed(1)}`);
    this.last = now;
  }

  header(): string {
    return [`${this.total};dur=${(this.last - this.started).toFixed(1)};desc="${this.description}"`, ...this.stages].join(', ');
  }
}
