module.exports = { ...require('../../jest.preset.js'), displayName: 'compaction', rootDir: __dirname };
