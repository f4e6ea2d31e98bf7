/** The benches' own databases on the server of `baseUrl`: created empty (dropped first if left over), and dropped. */

async function admin(baseUrl, run) {
  const { default: pg } = await import('pg');
  const url = new URL(baseUrl);
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** An empty database `name` (an earlier run's is dropped first); returns its URL. */
export async function recreateDatabase(baseUrl, name) {
  await admin(baseUrl, async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${name}`);
  });
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function dropDatabase(baseUrl, name) {
  await admin(baseUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}
