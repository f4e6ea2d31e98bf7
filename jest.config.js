// Runs every project's unit and integration tests in one Jest process (one summary).
module.exports = {
  projects: [
    '<rootDir>/apps/api',
    '<rootDir>/apps/worker',
    '<rootDir>/apps/dashboard',
    '<rootDir>/libs/client',
    '<rootDir>/libs/compaction',
    '<rootDir>/libs/config',
    '<rootDir>/libs/jobs',
    '<rootDir>/libs/llm',
    '<rootDir>/libs/persistence',
    '<rootDir>/libs/testing',
    '<rootDir>/libs/tokens',
    '<rootDir>/docker',
    '<rootDir>/clients/python',
  ].filter((dir) => require('node:fs').existsSync(dir.replace('<rootDir>', __dirname) + '/jest.config.js')),
};
