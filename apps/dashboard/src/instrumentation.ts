/**
 * Runs once when the server starts. Next inlines NEXT_RUNTIME at build time (it is not read
 * from the environment), which keeps the Node-only startup check out of the Edge bundle.
 */
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME === 'nodejs') {
    const { assertConfigOrExit } = await import('./startup-check');
    assertConfigOrExit();
  }
}
