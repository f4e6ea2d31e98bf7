/**
 * The program of `TokenCountPool`'s worker threads: counts each batch it is sent with the same
 * counter as the calling thread (`counterFor`, one per encoding, built on first use), and replies
 * with the counts or the error. Started by path, never imported at run time.
 */
import { parentPort } from 'node:worker_threads';
import { counterFor } from './encoders';
import { Encoding } from './types';

/** What the pool sends: one batch of texts, all in one encoding. */
export interface CountRequest {
  id: number;
  encoding: Encoding;
  texts: string[];
}

/** What the worker answers: the counts in input order, or the error's stack. */
export interface CountReply {
  id: number;
  counts?: number[];
  error?: string;
}

function reply(job: CountRequest): CountReply {
  try {
    const count = counterFor(job.encoding);
    return { id: job.id, counts: job.texts.map((text) => count(text)) };
  } catch (error) {
    return { id: job.id, error: String((error instanceof Error && error.stack) || error) };
  }
}

parentPort?.on('message', (job: CountRequest) => parentPort?.postMessage(reply(job)));
