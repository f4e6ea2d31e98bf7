// One lint configuration for the workspace. The module-boundary rule keeps the
// dependency directions of CONVENTIONS.md: apps -> libs; compaction imports only tokens; the
// dashboard only config and the API client; apps use the testing lib only in specs;
// no lib imports an app.
import js from '@eslint/js';
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';
import { REDOS_ALLOW, REDOS_PENDING } from './tools/lint/redos-lists.mjs';
import redos from './tools/lint/redos-safe.mjs';

const nodeGlobals = Object.fromEntries(
  ['process', 'console', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'URL', 'fetch', 'Buffer', 'performance']
    .map((name) => [name, 'readonly']),
);

/** Test helpers inside an app (shared by its specs, left out of its build): lint treats them as specs. */
const TEST_HELPERS = ['**/test-app.ts', '**/*-test-stack.ts'];

/** Every lib but the testing one. */
const LIB_SCOPES = ['scope:client', 'scope:compaction', 'scope:config', 'scope:jobs', 'scope:llm', 'scope:persistence', 'scope:tokens'];

/** Allowed dependency directions by tag; tests may also import the testing lib. */
function boundaries(inTests) {
  const extra = inTests ? ['scope:testing'] : [];
  return {
    enforceBuildableLibDependency: false,
    allow: [],
    depConstraints: [
      // An app's own code never imports the testing lib (factories, fake upstreams): only its specs and test helpers do.
      // (Listed, not `notDependOnLibsWithTags`: that one also follows libs whose own specs use the testing lib.)
      { sourceTag: 'type:app', onlyDependOnLibsWithTags: [...LIB_SCOPES, ...extra] },
      // The dashboard reads the API over HTTP: its configuration and the generated API client, never the domain or the database.
      { sourceTag: 'scope:dashboard', onlyDependOnLibsWithTags: ['scope:config', 'scope:client', ...extra] },
      { sourceTag: 'type:e2e', onlyDependOnLibsWithTags: ['type:lib'] },
      // The REST client is published on its own: it depends on no other project.
      { sourceTag: 'scope:client', onlyDependOnLibsWithTags: [...extra] },
      { sourceTag: 'scope:tokens', onlyDependOnLibsWithTags: [...extra] },
      { sourceTag: 'scope:config', onlyDependOnLibsWithTags: [...extra] },
      { sourceTag: 'scope:compaction', onlyDependOnLibsWithTags: ['scope:tokens', ...extra] },
      { sourceTag: 'scope:llm', onlyDependOnLibsWithTags: ['scope:compaction', 'scope:tokens', ...extra] },
      { sourceTag: 'scope:jobs', onlyDependOnLibsWithTags: ['scope:compaction', 'scope:tokens', 'scope:config', ...extra] },
      { sourceTag: 'scope:persistence', onlyDependOnLibsWithTags: ['scope:compaction', 'scope:tokens', 'scope:config', ...extra] },
      { sourceTag: 'scope:testing', onlyDependOnLibsWithTags: ['type:lib'] },
    ],
  };
}

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '**/dist/**',
      '**/.next/**',
      '**/.nx/**',
      '**/generated/**',
      '**/*.d.ts',
      'tmp/**',
      'test-results/**',
      'playwright-report/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    plugins: { '@nx': nx },
    files: ['apps/*/src/**/*.{ts,tsx,js}', 'libs/*/src/**/*.{ts,js}', 'e2e/**/*.ts', 'docker/**/*.ts', 'clients/*/**/*.ts'],
    rules: { '@nx/enforce-module-boundaries': ['error', boundaries(false)] },
  },
  {
    // Every regex the apps and libs run is proven linear-time by recheck (issue #15): an agent's
    // tool output is adversarial input. Tests are exempt: their regexes see only their own data.
    plugins: { compactor: redos },
    files: ['apps/*/src/**/*.{ts,tsx}', 'libs/*/src/**/*.ts'],
    ignores: ['**/*.spec.ts', '**/*.spec.tsx', '**/*.int-spec.ts', ...TEST_HELPERS],
    rules: { 'compactor/redos-safe': ['error', { allow: REDOS_ALLOW, pending: REDOS_PENDING }] },
  },
  {
    // Tests may also use the testing lib (factories, databases, the fake LLM upstream).
    files: ['**/*.spec.ts', '**/*.spec.tsx', '**/*.int-spec.ts', ...TEST_HELPERS],
    rules: { '@nx/enforce-module-boundaries': ['error', boundaries(true)] },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
    languageOptions: { globals: { ...nodeGlobals, require: 'readonly', module: 'writable', __dirname: 'readonly' } },
  },
  {
    files: ['scripts/**/*.mjs', 'bench/**/*.mjs', 'e2e/**/*.ts'],
    languageOptions: { globals: nodeGlobals },
  },
);
