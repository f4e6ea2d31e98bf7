export * from './job-names';
export * from './job-registry';
export * from './job-handler.decorator';
export * from './job-queue';
export * from './redis-connection';
export * from './event-bus';
export * from './check-redis';
export * from './worker-heartbeat';
