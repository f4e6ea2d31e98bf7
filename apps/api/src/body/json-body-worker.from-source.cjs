// Starts json-body-worker.ts in a worker thread when the lib runs from its TypeScript sources (Jest: a
// worker thread is outside Jest's module system and its transform). Compiles each .ts file it
// requires with SWC, as Jest does. Built code starts the compiled json-body-worker.js and never loads this.
'use strict';
const { readFileSync } = require('node:fs');
const { transformSync } = require('@swc/core');

require.extensions['.ts'] = (module, filename) => {
  const { code } = transformSync(readFileSync(filename, 'utf8'), {
    filename,
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
    module: { type: 'commonjs' },
    sourceMaps: 'inline',
  });
  module._compile(code, filename);
};

require('./json-body-worker.ts');
