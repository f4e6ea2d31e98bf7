module.exports = { ...require('../../jest.preset.js'), displayName: 'client-python', rootDir: __dirname };
