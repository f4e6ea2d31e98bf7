// Runs every project's unit and integration tests in one Jest process (one summary): per directory
// a unit project (its jest.config.js: `*.spec.ts`, no database) and an integration project
// (`<name>:int`: `*.int-spec.ts`, after the global setup that prepares the template database).
// Jest runs a project's globalSetup only when a test of that project is selected, so
// `npx jest libs/compaction` never connects to PostgreSQL.
const fs = require('node:fs');
const path = require('node:path');
const { integrationProject } = require('./jest.integration.js');

const dirs = [
  'apps/api',
  'apps/worker',
  'apps/dashboard',
  'libs/client',
  'libs/compaction',
  'libs/config',
  'libs/jobs',
  'libs/llm',
  'libs/persistence',
  'libs/testing',
  'libs/tokens',
  'docker',
  'clients/python',
].filter((dir) => fs.existsSync(path.join(__dirname, dir, 'jest.config.js')));

module.exports = {
  projects: dirs.flatMap((dir) => {
    const unit = require(path.join(__dirname, dir, 'jest.config.js'));
    return [unit, integrationProject(unit)];
  }),
};
