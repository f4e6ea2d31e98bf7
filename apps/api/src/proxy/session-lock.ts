import { Injectable } from '@nestjs/common';

/**
 * Runs tasks one at a time per key, in the order they were queued (queueing is synchronous).
 * The proxy holds a conversation's key while it compares and appends, and while it records an
 * answer, so the next request of the conversation sees the answer already stored. Across API
 * processes, the append's expected last seq (compare-and-append) keeps the history right.
 * One per process, shared by ConversationResolver and ConversationRecorder.
 */
@Injectable()
export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>();
  private finished = 0;

  /** Counts the tasks finished so far, under any key: unchanged means nothing ran to completion meanwhile. */
  get generation(): number {
    return this.finished;
  }

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(task, task);
    const tail = result.then(
      () => {
        this.finished++;
      },
      () => {
        this.finished++;
      },
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}
