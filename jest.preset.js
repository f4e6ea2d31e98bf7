// One preset for every project, so the ESM transform list and the path aliases live in one place.
const path = require('node:path');
const { compilerOptions } = require('./tsconfig.base.json');

const moduleNameMapper = {};
for (const [alias, [target]] of Object.entries(compilerOptions.paths)) {
  moduleNameMapper[`^${alias}$`] = path.join(__dirname, target);
}

module.exports = {
  testEnvironment: 'node',
  testMatch: ['<rootDir>/**/*.spec.ts?(x)', '<rootDir>/**/*.int-spec.ts'],
  // npm test runs the fault specs (SIGKILL, outages, stalls: timed in seconds of lock and stall windows)
  // in a second, serial Jest run, so no other suite's load shifts their windows (scripts/test.mjs).
  testPathIgnorePatterns: ['/node_modules/', '/.next/', '/dist/', ...(process.env.COMPACTOR_JEST_PHASE === 'parallel' ? ['/src/reliability/.*\\.int-spec\\.ts$'] : [])],
  moduleFileExtensions: ['ts', 'tsx', 'js', 'mjs', 'cjs', 'json'],
  moduleNameMapper,
  transform: {
    '^.+\\.(t|j|mj)sx?$': [
      '@swc/jest',
      {
        jsc: {
          parser: { syntax: 'typescript', decorators: true, tsx: true },
          transform: { legacyDecorator: true, decoratorMetadata: true, react: { runtime: 'automatic' } },
          target: 'es2022',
        },
        module: { type: 'commonjs' },
      },
    ],
  },
  // Nest 12 and a few of its dependencies ship ESM only; Jest needs them transformed.
  transformIgnorePatterns: [
    '/node_modules/(?!(@nestjs|file-type|strtok3|token-types|@tokenizer|uint8array-extras|load-esm|es-toolkit)/)',
  ],
  globalSetup: path.join(__dirname, 'libs/testing/src/jest-global-setup.js'),
  testTimeout: 30000,
};
