// The integration Jest project of a directory: its `*.int-spec.ts` on the real PostgreSQL and Redis,
// after the global setup that builds the migrated template database they clone.
const path = require('node:path');

/** `unit` is the directory's own jest.config.js (the unit project); the int project is named `<name>:int`. */
function integrationProject(unit) {
  return {
    ...unit,
    displayName: `${unit.displayName}:int`,
    testMatch: ['<rootDir>/**/*.int-spec.ts'],
    // npm test runs the fault specs (SIGKILL, outages, stalls: timed in seconds of lock and stall windows)
    // in a second, serial Jest run, so no other suite's load shifts their windows (scripts/test.mjs).
    testPathIgnorePatterns: [...unit.testPathIgnorePatterns, ...(process.env.COMPACTOR_JEST_PHASE === 'parallel' ? ['/src/reliability/.*\\.int-spec\\.ts$'] : [])],
    globalSetup: path.join(__dirname, 'libs/testing/src/jest-global-setup.js'),
  };
}

module.exports = { integrationProject };
