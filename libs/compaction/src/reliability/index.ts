// Seed 004's reliability score and the facts ledger that feeds its context confidence.
export * from '../ledger';
export * from './score';
