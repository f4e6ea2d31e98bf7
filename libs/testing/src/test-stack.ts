import { randomBytes } from 'node:crypto';
import { RunningApp, startWorkerFor } from './built-app';
import { FakeLlm, FakeLlmOptions, startFakeLlm } from './fake-llm';
import { FaultStack, startFaultStack } from './fault-stack';

/**
 * What an in-process API offers the stack: apps/api's `startTestApi` (passed in, since a lib never
 * imports an app). The worker joins its database, Redis and queue prefix.
 */
export interface StackApi {
  readonly config: { DATABASE_URL: string; REDIS_URL: string; QUEUE_PREFIX: string };
  tenantKey(): Promise<string>;
  close(): Promise<void>;
}

interface TestStackCommon {
  /** Names the database, the queue prefix and the summarizer's key (letters, digits, `-` and `_`). */
  label: string;
  /** How the fake LLM upstream answers. */
  llm?: FakeLlmOptions;
}

export interface InProcessStackOptions<Api extends StackApi> extends TestStackCommon {
  /** Starts the in-process API; the stack then starts one built worker next to it, summarizing with the fake upstream. */
  api: () => Promise<Api>;
  /** More worker environment (e.g. COMPACTION_LLM_RETRY_WINDOW_MS). */
  worker?: Record<string, string>;
}

export interface BuiltStackOptions extends TestStackCommon {
  /** Built API and worker processes that each test starts (and may kill): `startFaultStack`. */
  api: 'built';
}

interface TestStackParts {
  /** The fake LLM upstream the summarizer talks to. */
  readonly fake: FakeLlm;
  /** The OPENAI_API_KEY the worker is given: a test can check that it never appears in a log. */
  readonly summarizerKey: string;
  /** Worker environment for the `openai` summarizer on the fake upstream. */
  summarizer(): Record<string, string>;
}

/** An in-process API, a tenant key on it, and one built worker on the fake LLM upstream. */
export interface InProcessTestStack<Api extends StackApi> extends TestStackParts {
  readonly api: Api;
  /** A key of a new tenant with every scope. */
  readonly key: string;
  readonly worker: RunningApp;
  /** Stops the worker, the API (dropping its database) and the fake upstream. */
  close(): Promise<void>;
}

/** A fault stack (built processes the tests start) with the fake LLM upstream; `close` also stops the upstream. */
export type BuiltTestStack = FaultStack & TestStackParts;

/**
 * The integration-test stack the int-specs share: the fake LLM upstream, a test database and queue
 * prefix, and the API and worker on them. Whatever started before a step failed is stopped again.
 */
export function startTestStack(options: BuiltStackOptions): Promise<BuiltTestStack>;
export function startTestStack<Api extends StackApi>(options: InProcessStackOptions<Api>): Promise<InProcessTestStack<Api>>;
export async function startTestStack<Api extends StackApi>(options: BuiltStackOptions | InProcessStackOptions<Api>): Promise<BuiltTestStack | InProcessTestStack<Api>> {
  const fake = await startFakeLlm(options.llm);
  const summarizerKey = `sk-test-${options.label}-${randomBytes(12).toString('hex')}`;
  const summarizer = () => ({ COMPACTOR_SUMMARIZER: 'openai', COMPACTOR_SUMMARIZER_BASE_URL: fake.openaiBaseUrl, OPENAI_API_KEY: summarizerKey });
  const parts: TestStackParts = { fake, summarizerKey, summarizer };
  const cleanups: (() => Promise<void>)[] = [() => fake.close()];
  const closeAll = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  };
  try {
    if (options.api === 'built') {
      const stack = await startFaultStack(options.label);
      cleanups.push(() => stack.close());
      return { ...stack, ...parts, close: closeAll };
    }
    const api = await options.api();
    cleanups.push(() => api.close());
    const key = await api.tenantKey();
    const worker = await startWorkerFor(api.config, { ...summarizer(), ...options.worker });
    cleanups.push(() => worker.stop());
    return { ...parts, api, key, worker, close: closeAll };
  } catch (error) {
    await closeAll();
    throw error;
  }
}
