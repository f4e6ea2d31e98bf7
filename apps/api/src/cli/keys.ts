// API keys from the command line (`npm run keys -- create --name ci --scopes ingest,read`).
// Keys are printed once and stored only as their SHA-256.
import { ApiKeyRepository, ApiKeyScope, PgPoolService, PrismaService, TenantRepository } from '@compactor/persistence';
import { parseArgs } from 'node:util';
import { generateApiKey, hashApiKey, keyPrefix } from '../auth/api-key-secret';
import { SCOPES } from '../auth/scopes';
import { loadApiConfig } from '../config/api-config';
import { keyExpiry, MAX_KEY_LIFETIME_DAYS } from '../keys/keys.dto';

const usage = `usage:
  npm run keys -- create --name <name> [--scopes ingest,read,admin] [--expires-in-days N] [--tenant default]
  npm run keys -- list [--tenant default]
  npm run keys -- revoke <key id> [--tenant default]`;

type Options = { name?: string; scopes?: string; 'expires-in-days'?: string; tenant?: string; help?: boolean };

/** The command, its positional arguments and options; a message for an unknown option or one without its value. */
function parseCommandLine(argv: string[]): { command?: string; args: string[]; options: Options } | { error: string } {
  try {
    const { positionals, values } = parseArgs({
      args: argv,
      options: { name: { type: 'string' }, scopes: { type: 'string' }, 'expires-in-days': { type: 'string' }, tenant: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
    const [command, ...args] = positionals;
    return { command, args, options: values };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

async function main(): Promise<number> {
  const parsed = parseCommandLine(process.argv.slice(2));
  if ('error' in parsed) {
    console.error(`${parsed.error}\n${usage}`);
    return 2;
  }
  const { command, args, options } = parsed;
  if (options.help) {
    console.log(usage);
    return 0;
  }
  const config = loadApiConfig();
  const prisma = new PrismaService(config.DATABASE_URL);
  const pg = new PgPoolService(config.DATABASE_URL);
  try {
    const tenant = await new TenantRepository(prisma).ensure(options.tenant);
    const keys = new ApiKeyRepository(prisma, pg);
    if (command === 'create') {
      const name = options.name;
      const scopes = (options.scopes ?? 'ingest,read').split(',').map((s) => s.trim());
      const bad = scopes.filter((s) => !(SCOPES as string[]).includes(s));
      if (!name || bad.length > 0) {
        console.error(bad.length ? `unknown scope(s): ${bad.join(', ')} (allowed: ${SCOPES.join(', ')})` : usage);
        return 2;
      }
      const days = options['expires-in-days'];
      const lifetime = days === undefined ? undefined : Number(days);
      if (lifetime !== undefined && !(Number.isInteger(lifetime) && lifetime >= 1 && lifetime <= MAX_KEY_LIFETIME_DAYS)) {
        console.error(`--expires-in-days must be a whole number of days from 1 to ${MAX_KEY_LIFETIME_DAYS}`);
        return 2;
      }
      const expiresAt = keyExpiry({ expiresInDays: lifetime }, new Date());
      const key = generateApiKey();
      const record = await keys.create({ tenantId: tenant.id, name, prefix: keyPrefix(key), hash: hashApiKey(key), scopes: scopes as ApiKeyScope[], expiresAt });
      console.log(
        `Created key ${record.id} "${name}" [${scopes.join(', ')}] for tenant "${tenant.name}"${expiresAt ? `, expiring ${expiresAt.toISOString()}` : ''}.`,
      );
      console.log(`Store it now; it is not shown again:\n\n  ${key}\n`);
      return 0;
    }
    if (command === 'list') {
      for (const k of await keys.list(tenant.id)) {
        const expiry = k.expiresAt ? `  ${k.expiresAt.getTime() <= Date.now() ? 'expired' : 'expires'} ${k.expiresAt.toISOString()}` : '';
        console.log(`${k.id}  ${k.prefix}…  ${k.name}  [${k.scopes.join(', ')}]${k.revokedAt ? `  revoked ${k.revokedAt.toISOString()}` : ''}${expiry}`);
      }
      return 0;
    }
    if (command === 'revoke' && args[0]) {
      const revoked = /^[0-9a-f-]{36}$/i.test(args[0]) ? await keys.revoke(tenant.id, args[0]) : null;
      if (!revoked) {
        console.error(`No active key ${args[0]} in tenant "${tenant.name}"`);
        return 1;
      }
      console.log(`Revoked ${revoked.id} "${revoked.name}"`);
      return 0;
    }
    console.error(usage);
    return 2;
  } finally {
    await prisma.$disconnect();
    await pg.onModuleDestroy();
  }
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
