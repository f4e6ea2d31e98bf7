// One lint configuration for the workspace. The module-boundary rule keeps the
// dependency directions of CONVENTIONS.md: apps -> libs; compaction imports only tokens;
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

/** Allowed dependency directions by tag; tests may also import the testing lib. */
function boundaries(inTests) {
  const extra = inTests ? ['scope:testing'] : [];
  return {
    enforceBuildableLibDependency: false,
    allow: [],
    depConstraints: [
      { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:lib'] },
      { sourceTag: 'type:e2e', onlyDependOnLibsWithTags: ['type:lib'] },
      { sourceTag: 'scope:tokens', onlyDependOnLibsWithTags: [...extra] },
      { sourceTag: 'scope:config', onlyDependOnLibsWithTags: [...extra] },
      { sourceTag: 'scope:compaction', onlyDependOnLibsWithTags: ['scope:tokens', ...extra] },
      { sourceTag: 'scope:llm', onlyDependOnLibsWithTags: ['scope:compaction', 'scope:tokens', ...extra] },
      { sourceTag: 'scope:jobs', onlyDependOnLibsWithTags: ['scope:compaction', 'scope:tokens', ...extra] },
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
    files: ['apps/*/src/**/*.{ts,tsx,js}', 'libs/*/src/**/*.{ts,js}', 'e2e/**/*.ts', 'docker/**/*.ts'],
    rules: { '@nx/enforce-module-boundaries': ['error', boundaries(false)] },
  },
  {
    // Every regex the apps and libs run is proven linear-time by recheck (issue #15): an agent's
    // tool output is adversarial input. Tests are exempt: their regexes see only their own data.
    plugins: { compactor: redos },
    files: ['apps/*/src/**/*.{ts,tsx}', 'libs/*/src/**/*.ts'],
    ignores: ['**/*.spec.ts', '**/*.spec.tsx', '**/*.int-spec.ts', '**/test-app.ts'],
    rules: { 'compactor/redos-safe': ['error', { allow: REDOS_ALLOW, pending: REDOS_PENDING }] },
  },
  {
    // Tests may also use the testing lib (factories, databases, the fake LLM upstream).
    files: ['**/*.spec.ts', '**/*.int-spec.ts', '**/test-app.ts'],
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
