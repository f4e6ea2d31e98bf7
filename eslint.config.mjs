// One lint configuration for the workspace. The module-boundary rule keeps the
// dependency directions of CONVENTIONS.md: apps -> libs; compaction imports only tokens;
// no lib imports an app.
import js from '@eslint/js';
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

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
    plugins: { '@nx': nx },
    files: ['**/*.ts', '**/*.tsx', '**/*.js', '**/*.mjs'],
    rules: {
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allow: [],
          depConstraints: [
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:lib'] },
            { sourceTag: 'type:e2e', onlyDependOnLibsWithTags: ['type:lib'] },
            { sourceTag: 'scope:tokens', onlyDependOnLibsWithTags: [] },
            { sourceTag: 'scope:config', onlyDependOnLibsWithTags: [] },
            { sourceTag: 'scope:compaction', onlyDependOnLibsWithTags: ['scope:tokens'] },
            { sourceTag: 'scope:llm', onlyDependOnLibsWithTags: ['scope:compaction', 'scope:tokens'] },
            { sourceTag: 'scope:jobs', onlyDependOnLibsWithTags: ['scope:compaction', 'scope:tokens'] },
            {
              sourceTag: 'scope:persistence',
              onlyDependOnLibsWithTags: ['scope:compaction', 'scope:tokens', 'scope:config'],
            },
            { sourceTag: 'scope:testing', onlyDependOnLibsWithTags: ['type:lib'] },
          ],
        },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
    languageOptions: { globals: { require: 'readonly', module: 'writable', __dirname: 'readonly', process: 'readonly' } },
  },
  {
    files: ['scripts/**/*.mjs', 'e2e/**/*.ts'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', URL: 'readonly' } },
  },
);
