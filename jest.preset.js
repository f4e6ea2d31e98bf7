// One preset for every project, so the ESM transform list and the path aliases live in one place.
const path = require('node:path');
const { compilerOptions } = require('./tsconfig.base.json');

const moduleNameMapper = {};
for (const [alias, [target]] of Object.entries(compilerOptions.paths)) {
  moduleNameMapper[`^${alias}$`] = path.join(__dirname, target);
}

// A project's own config (this preset) runs its unit specs only: no globalSetup, so they need no
// PostgreSQL or Redis and Nx caches them (`nx run <project>:test`). The int-specs are a second Jest
// project per directory, made by `integrationProject` in jest.integration.js (the root config lists
// both; `nx run <project>:int-test` selects it).
module.exports = {
  testEnvironment: 'node',
  testMatch: ['<rootDir>/**/*.spec.ts?(x)'],
  testPathIgnorePatterns: ['/node_modules/', '/.next/', '/dist/'],
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
  testTimeout: 30000,
};
