export * from './fake-llm';
