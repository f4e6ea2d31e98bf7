module.exports = { ...require('../jest.preset.js'), displayName: 'docker', rootDir: __dirname };
