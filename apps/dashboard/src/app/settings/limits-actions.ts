'use server';

import { revalidatePath } from 'next/cache';
import { z } from 'zod';
import { describeFetchFailure } from '../../api/readiness';
import { API_TIMEOUT_MS, errorMessage } from '../../components/settings/api-access';
import { LIMITS, parseLimitsForm, type LimitField, type LimitsFormProblems } from '../../components/settings/limits-view';
import { authedClient } from '../../server/api-key';

export interface LimitsFormState {
  status: 'idle' | 'error' | 'done';
  message?: string;
  /** Problems by field (`limits.requestsPerMinutePerKey`, …), shown next to it. */
  problems?: LimitsFormProblems;
}

const validationBody = z.object({ error: z.object({ message: z.string(), details: z.object({ fields: z.array(z.object({ field: z.string(), message: z.string() })) }).optional() }) });
const rateLimitedBody = z.object({ error: z.object({ code: z.literal('rate_limited'), details: z.object({ retryAfterSeconds: z.number() }) }) });
const LIMIT_FIELDS = LIMITS.map((l) => `limits.${l.name}` as LimitField);

/** Saves the Limits section through PATCH /v1/tenant with the saved key; the API's 400 names the field, shown next to it. */
export async function saveTenantLimits(_previous: LimitsFormState, form: FormData): Promise<LimitsFormState> {
  const input = parseLimitsForm((name) => form.get(name));
  if (!input.ok) return { status: 'error', message: 'Check the fields marked below.', problems: input.problems };
  if (Object.keys(input.value).length === 0) return { status: 'done', message: 'Nothing changed.' };
  const client = await authedClient();
  if (!client) return { status: 'error', message: 'Enter an API key with the admin scope first.' };
  let result;
  try {
    result = await client.PATCH('/v1/tenant', { body: { limits: input.value }, signal: AbortSignal.timeout(API_TIMEOUT_MS), cache: 'no-store' });
  } catch (error) {
    return { status: 'error', message: `Nothing was saved: ${describeFetchFailure(error, API_TIMEOUT_MS)}.` };
  }
  const { response, error } = result;
  if (response.status === 400) {
    const parsed = validationBody.safeParse(error);
    const problems: LimitsFormProblems = {};
    for (const p of parsed.success ? (parsed.data.error.details?.fields ?? []) : []) {
      const field = LIMIT_FIELDS.find((f) => p.field === f);
      if (field) problems[field] = p.message;
    }
    return { status: 'error', message: Object.keys(problems).length > 0 ? 'Check the fields marked below.' : errorMessage(error, 'The API refused the limits.'), problems };
  }
  if (response.status === 401 || response.status === 403) {
    return { status: 'error', message: response.status === 403 ? 'Changing limits needs the admin scope.' : `The API rejected the saved key: ${errorMessage(error, 'unauthorized')}.` };
  }
  if (response.status === 429) {
    const limited = rateLimitedBody.safeParse(error);
    return { status: 'error', message: `Nothing was saved: the saved key is over a rate limit${limited.success ? `; retry in ${limited.data.error.details.retryAfterSeconds} s` : ''}.` };
  }
  if (!response.ok) return { status: 'error', message: `Nothing was saved: HTTP ${response.status}: ${errorMessage(error, response.statusText)}.` };
  revalidatePath('/settings');
  const changed = Object.keys(input.value).length;
  return { status: 'done', message: `Limits saved (${changed} changed).` };
}
