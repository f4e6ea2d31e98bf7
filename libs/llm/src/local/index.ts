// The offline, deterministic `local` summarizer (SPEC.md "LLM providers").
export {
  LOCAL_DEFAULT_CONTEXT_WINDOW,
  LOCAL_HARD_CAP_FACTOR,
  LOCAL_SUMMARIZER_MODEL,
  LOCAL_SUMMARIZER_PROVIDER,
  LocalSummarizer,
  type LocalSummarizerOptions,
} from './local-summarizer';
export { detectSections } from './structure';
