/**
 * Polls until `check` returns a value other than undefined, or fails after the deadline.
 * Tests wait for background work with this, never with fixed sleeps.
 */
export async function pollUntil<T>(
  check: () => Promise<T | undefined>,
  { timeoutMs = 15000, intervalMs = 50, what = 'condition' } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
