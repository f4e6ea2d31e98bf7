const preset = require('../../jest.preset.js');

module.exports = {
  ...preset,
  displayName: 'dashboard',
  rootDir: __dirname,
  moduleNameMapper: {
    ...preset.moduleNameMapper,
    // Next resolves this marker itself; under Jest (server code only) it is the no-op variant.
    '^server-only$': require.resolve('next/dist/compiled/server-only/empty.js'),
    // CSS modules: class names as their keys (Next compiles the real ones).
    '\\.module\\.css$': '<rootDir>/jest/css-module-stub.js',
  },
};
