// The unit-test entry of the testing lib (`@compactor/testing/unit`): only what runs without PostgreSQL, Redis or a
// network, so a `*.spec.ts` can import it without pulling in the database and server helpers of `@compactor/testing`.
export * from './new-test-service';
