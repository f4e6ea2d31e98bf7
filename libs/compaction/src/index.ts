// The heart of Compactor: pure TypeScript, no I/O. Canonical messages, budgets, policies
// and stages arrive with the sessions and compaction issues; today it holds the typed
// domain errors that every layer throws.
export * from './errors';
