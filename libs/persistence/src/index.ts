export * from './prisma.service';
export * from './persistence.module';
export * from './health.repository';
export * from './idempotency.repository';
export { Prisma } from './generated/prisma/client';
export * from './check-postgres';
