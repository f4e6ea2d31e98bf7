import { combineCounts, countTextSync, ModelSpec } from '@compactor/tokens';
import { CanonicalMessage } from '../messages/canonical';
import { countableParts } from '../messages/countable';
import { CountMessage } from './types';

/**
 * Counts a message on the calling thread, exactly as ingest counts it (same parts, same
 * overhead, same estimate). For what the engine writes (checkpoints, masked outputs): short
 * texts, where a worker thread would cost more than it saves.
 */
export function messageCounter(spec: ModelSpec): { countMessage: CountMessage; countText: (text: string) => number } {
  // One counter per spec: callers that memoize by counter (masking) find it again on the next read.
  const key = JSON.stringify(spec);
  let counter = counters.get(key);
  if (counter === undefined) {
    if (counters.size >= MAX_COUNTERS) counters.clear();
    counter = {
      countMessage: (message: CanonicalMessage) => {
        const parts = countableParts(message);
        return combineCounts({ textTokens: parts.texts.map((t) => countTextSync(t, spec.encoding)), images: parts.images, opaqueJson: parts.opaqueJson }, spec);
      },
      countText: (text: string) => countTextSync(text, spec.encoding),
    };
    counters.set(key, counter);
  }
  return counter;
}

/** Specs are few (one per model in use); the bound only guards against clients minting model ids. */
const MAX_COUNTERS = 64;
const counters = new Map<string, { countMessage: CountMessage; countText: (text: string) => number }>();
