// The two lists of compactor/redos-safe (tools/lint/redos-safe.mjs). Each entry names a file and a
// regex source (or, for a RegExp built at run time, its pattern expression as written).

/**
 * Regexes that never see user, tool or upstream text (operator configuration and test doubles), and
 * the tokenizer's own pre-tokenizer pattern, which defines the count and so cannot be rewritten.
 */
export const REDOS_ALLOW = [
  {"file":"apps/dashboard/src/config.ts","source":"\\/+$","reason":"the API URL from the dashboard's environment"},
  {"file":"libs/llm/src/providers/anthropic.ts","source":"\\/+$","reason":"the provider base URL from the operator's configuration"},
  {"file":"libs/llm/src/providers/ollama.ts","source":"\\/+$","reason":"the provider base URL from the operator's configuration"},
  {"file":"libs/llm/src/providers/openai.ts","source":"\\/+$","reason":"the provider base URL from the operator's configuration"},
  {"file":"libs/tokens/src/bpe-counter.ts","source":"rankData.pat_str","reason":"js-tiktoken's pre-tokenizer pattern (o200k_base, cl100k_base): counts must split text exactly as the tokenizer does; recheck cannot decide it (look-ahead), and the counting specs and npm run bench -- hostile time it on megabyte runs"},
  {"file":"libs/testing/src/recording-relay.ts","source":"\\/+$","reason":"a test relay's configured URL, never in the service"},
];

/**
 * Known super-linear or undecidable regexes on user, tool or upstream text that are not yet
 * rewritten (issue #15 item 1). This list only shrinks: rewrite an entry as a linear regex the
 * checker proves, or as a scan, and delete it; the rule fails on an entry that matches nothing.
 */
export const REDOS_PENDING = [];
