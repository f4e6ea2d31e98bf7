export * from './test-database';
export * from './test-redis';
export * from './poll';
export * from './built-app';
export * from './fake-llm';
export * from './swe-agent';
export * from './recording-relay';
export * from './claude-code';
