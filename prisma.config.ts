// Prisma CLI configuration. Migrate runs through the pg driver adapter and Prisma's
// WebAssembly schema engine, so no native engine is downloaded (see TOOLCHAIN.md):
// the adapter must be @prisma/adapter-pg 7.x (installed as `adapter-pg7`), because 6.x
// cannot read the `name` column type that Migrate's introspection returns.
import path from 'node:path';
import { defineConfig } from 'prisma/config';
import { PrismaPg } from 'adapter-pg7';

// The same default as the apps' config; schema.prisma's env("DATABASE_URL") needs it set.
const databaseUrl = (process.env.DATABASE_URL ||= 'postgresql://postgres@127.0.0.1:5432/compactor');

export default defineConfig({
  experimental: { adapter: true },
  engine: 'js',
  schema: path.join('prisma', 'schema.prisma'),
  migrations: { path: path.join('prisma', 'migrations') },
  async adapter() {
    const factory = new PrismaPg({ connectionString: databaseUrl });
    return factory as never;
  },
});
