module.exports = { ...require('../../jest.preset.js'), displayName: 'tokens', rootDir: __dirname };
