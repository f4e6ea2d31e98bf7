// Seed 004's reliability score and the pinned-facts ledger that feeds its context confidence.
export * from './pinned-facts';
export * from './score';
