import { createTokenCounter, RankData, TokenCounter } from './bpe-counter';
import { Encoding } from './types';

export const ENCODINGS: readonly Encoding[] = ['o200k_base', 'cl100k_base'];

/**
 * Absolute paths of js-tiktoken's rank files. Resolved
 * from this file first, then from the working directory, for compiled copies of the lib
 * that live outside the workspace's node_modules tree.
 */
export function rankDataPaths(): Record<Encoding, string> {
  const paths = [__dirname, process.cwd()];
  return {
    o200k_base: require.resolve('js-tiktoken/ranks/o200k_base', { paths }),
    cl100k_base: require.resolve('js-tiktoken/ranks/cl100k_base', { paths }),
  };
}

/** js-tiktoken's rank data, loaded lazily: each file is a few MB of source. */
function loadRankData(encoding: Encoding): RankData {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- synchronous lazy load of a CommonJS data module
  const loaded: RankData | { default: RankData } = require(rankDataPaths()[encoding]);
  return 'default' in loaded ? loaded.default : loaded;
}

export function assertEncoding(encoding: string): asserts encoding is Encoding {
  if (!(ENCODINGS as readonly string[]).includes(encoding)) {
    throw new Error(`Unsupported encoding "${encoding}"; expected one of ${ENCODINGS.join(', ')}`);
  }
}

const counters = new Map<Encoding, TokenCounter>();

/** The calling thread's counter for an encoding, built once per process (~0.2–0.5 s the first time). */
export function counterFor(encoding: Encoding): TokenCounter {
  let counter = counters.get(encoding);
  if (!counter) {
    assertEncoding(encoding);
    counter = createTokenCounter(loadRankData(encoding));
    counters.set(encoding, counter);
  }
  return counter;
}

/** The rank data itself, for the specs' comparison against js-tiktoken. */
export const rankDataFor = loadRankData;

/**
 * Token count of one text in `encoding`, on the calling thread. Special-token text such as
 * `<|endoftext|>` counts as plain text (agent tool output can contain it). Blocks for about
 * 0.25–0.7 s per MB: use `TokenCountPool` for big texts on a server thread.
 */
export function countTextSync(text: string, encoding: Encoding): number {
  return counterFor(encoding)(text);
}
