// The facts ledger (SPEC.md "Facts ledger"): one extractor for every stage, the summaries' check and the reliability score.
export * from './ledger';
export * from './render';
export * from './account';
export { settingsIn, testResultsIn, urlsIn, hashesIn, ticketIdsIn, constraintSentences, exitStatusOf } from './recognize';
export { contextTextOf } from './context-text';
export { placeholderKeys } from './placeholder';
