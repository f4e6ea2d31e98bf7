import { Compactor, CompactorApiError } from '@compactor/client';

/** A long tool output, as an agent's `cat` of a log file returns it. */
const logFile = (name: string) =>
  Array.from({ length: 150 }, (_, i) => `${name} ${String(i).padStart(4, '0')} INFO request served in ${(i * 37) % 250} ms`).join('\n');

/** append → context → compact → undo, on the session `sessionId`. */
export async function example(baseUrl: string, apiKey: string, sessionId: string) {
  const compactor = new Compactor({ baseUrl, apiKey });

  // 1. Append an agent's turns (OpenAI shape here); the first append creates the session.
  const messages: Record<string, unknown>[] = [{ role: 'user', content: 'Why are the API replicas slow?' }];
  for (const replica of ['api-1', 'api-2', 'api-3', 'api-4']) {
    const call = { id: `call_${replica}`, type: 'function', function: { name: 'read_log', arguments: JSON.stringify({ replica }) } };
    messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    messages.push({ role: 'tool', tool_call_id: call.id, content: logFile(replica) });
  }
  messages.push({ role: 'assistant', content: 'api-3 serves its requests slowest.' });
  const appended = await compactor.append(
    sessionId,
    // A new session's settings: its model and window, and the balanced preset masking tool outputs older than 2 turns.
    { model: 'gpt-4o', contextWindow: 16_000, outputReserve: 2_000, policy: { preset: 'balanced', overrides: { maskKeepLatestTurns: 2 } }, format: 'openai', messages },
    { idempotencyKey: `${sessionId}-turn-1` }, // the same key on a retry: applied once
  );
  console.log(`appended seq ${appended.firstSeq}..${appended.lastSeq}; context ${appended.usage.contextTokens} tokens`);

  // 2. The ready-to-send context, in the shape of your provider.
  const before = await compactor.context(sessionId, 'openai');
  console.log(`context: ${before.messages.length} messages, ${before.tokens} tokens`);

  // 3. Compact now and wait for the worker's run.
  const { job } = await compactor.compact(sessionId);
  const compacted = await compactor.waitForJob(job.id);
  const after = await compactor.context(sessionId, 'openai');
  console.log(`compaction ${compacted.status}: ${compacted.tokensBefore} → ${compacted.tokensAfter} tokens (version ${after.contextVersion})`);

  // 4. Undo it: the context returns to the version before the compaction; the history never changed.
  const undone = await compactor.undo(sessionId, job.id);
  const restored = await compactor.context(sessionId, 'openai');
  console.log(`undone: version ${undone.version} restores version ${undone.restoredVersion}, ${restored.tokens} tokens`);

  // Errors carry the API's error body.
  try {
    await compactor.context('no-such-session');
  } catch (error) {
    if (!(error instanceof CompactorApiError)) throw error;
    console.log(`${error.status} ${error.code}: ${error.message}`);
  }
  return { appended, before, compacted, after, undone, restored };
}
