'use server';

import { revalidatePath } from 'next/cache';
import { headers } from 'next/headers';
import { z } from 'zod';
import { describeFetchFailure } from '../../api/readiness';
import { API_TIMEOUT_MS, errorMessage, readWith, readWithSavedKey } from '../../components/settings/api-access';
import { callerSchema, createdApiKeySchema, revokedApiKeySchema } from '../../components/settings/settings-schema';
import { parseKeyInput, parseNewKeyForm, parseTenantForm, type TenantFormProblems } from '../../components/settings/settings-view';
import { authedClient, clearApiKey, clientWithKey, storeApiKey } from '../../server/api-key';

/**
 * Settings' Server Actions. The entered key travels only in the action's POST body, is checked
 * against the API, and is then kept in an httpOnly cookie; no state returned here contains it.
 */

export interface FormState {
  status: 'idle' | 'error' | 'done';
  message?: string;
  /** The field a problem is about, for aria-invalid and focus. */
  field?: string;
}

export interface CreateKeyState extends FormState {
  /** The new key, shown once. */
  created?: { id: string; name: string; prefix: string; scopes: string[]; secret: string; expiresAt: string | null };
}

/** Whether the browser reached the dashboard over HTTPS (directly or through a proxy), so the cookie can be Secure. */
async function overHttps(): Promise<boolean> {
  const h = await headers();
  const forwarded = h.get('x-forwarded-proto')?.split(',')[0]?.trim();
  if (forwarded) return forwarded === 'https';
  const origin = h.get('origin');
  return origin ? origin.startsWith('https:') : false;
}

export async function saveApiKey(_previous: FormState, form: FormData): Promise<FormState> {
  const input = parseKeyInput(form.get('apiKey'));
  if (!input.ok) return { status: 'error', message: input.message, field: input.field };
  // GET /v1/status/caller needs only `read`, which every key has: a 200 means the key is live.
  const check = await readWith(clientWithKey(input.value), (client, signal) => client.GET('/v1/status/caller', { signal, cache: 'no-store' }), callerSchema);
  if (check.state === 'rejected') {
    return { status: 'error', field: 'apiKey', message: check.status === 401 ? `The API rejected this key: ${check.message}.` : `The API refused this key: ${check.message}.` };
  }
  if (check.state === 'unavailable') return { status: 'error', field: 'apiKey', message: `The key could not be checked: ${check.reason}. Nothing was saved.` };
  if (check.state === 'no-key') return { status: 'error', field: 'apiKey', message: 'Enter an API key.' };
  await storeApiKey(input.value, await overHttps());
  revalidatePath('/', 'layout');
  return { status: 'done', message: `Key saved: scopes ${check.data.scopes.join(', ')}.` };
}

export async function removeApiKey(): Promise<void> {
  await clearApiKey();
  revalidatePath('/', 'layout');
}

export async function createApiKey(_previous: CreateKeyState, form: FormData): Promise<CreateKeyState> {
  const input = parseNewKeyForm(form.get('name'), form.getAll('scopes'), form.get('expiresInDays') ?? '');
  if (!input.ok) return { status: 'error', message: input.message, field: input.field };
  const result = await readWithSavedKey((client, signal) => client.POST('/v1/keys', { body: input.value, signal, cache: 'no-store' }), createdApiKeySchema);
  switch (result.state) {
    case 'no-key':
      return { status: 'error', message: 'Enter an API key with the admin scope first.' };
    case 'rejected':
      return { status: 'error', message: result.status === 403 ? 'Creating keys needs the admin scope.' : `The API rejected the saved key: ${result.message}.` };
    case 'unavailable':
      return { status: 'error', message: `The key was not created: ${result.reason}.` };
  }
  revalidatePath('/settings');
  const { id, name, prefix, scopes, key, expiresAt } = result.data;
  return { status: 'done', message: `Key “${name}” created.`, created: { id, name, prefix, scopes, secret: key, expiresAt: expiresAt ?? null } };
}

export async function revokeApiKey(_previous: FormState, form: FormData): Promise<FormState> {
  const keyId = form.get('keyId');
  if (typeof keyId !== 'string' || !/^[0-9a-f-]{36}$/i.test(keyId)) return { status: 'error', message: 'No such key.' };
  const result = await readWithSavedKey(
    (client, signal) => client.DELETE('/v1/keys/{keyId}', { params: { path: { keyId } }, signal, cache: 'no-store' }),
    revokedApiKeySchema,
  );
  switch (result.state) {
    case 'no-key':
      return { status: 'error', message: 'Enter an API key with the admin scope first.' };
    case 'rejected':
      return { status: 'error', message: result.status === 403 ? 'Revoking keys needs the admin scope.' : `The API rejected the saved key: ${result.message}.` };
    case 'unavailable':
      return { status: 'error', message: `The key was not revoked: ${result.reason}.` };
  }
  revalidatePath('/', 'layout');
  return { status: 'done', message: `Key “${result.data.name}” revoked.` };
}

export interface TenantFormState {
  status: 'idle' | 'error' | 'done';
  message?: string;
  /** Problems by field (`proxy.anthropicBaseUrl`, `proxy.openaiBaseUrl`, `proxy.timeoutMs`, `defaultPolicy`), shown next to it. */
  problems?: TenantFormProblems;
}

const validationBody = z.object({ error: z.object({ message: z.string(), details: z.object({ fields: z.array(z.object({ field: z.string(), message: z.string() })) }).optional() }) });
const TENANT_FIELDS = ['proxy.anthropicBaseUrl', 'proxy.openaiBaseUrl', 'proxy.timeoutMs', 'defaultPolicy'] as const;

/** Saves the Tenant section through PATCH /v1/tenant with the saved key; the API's 400 names the field, shown next to it. */
export async function saveTenantSettings(_previous: TenantFormState, form: FormData): Promise<TenantFormState> {
  const input = parseTenantForm((name) => form.get(name));
  if (!input.ok) return { status: 'error', message: 'Check the fields marked below.', problems: input.problems };
  const client = await authedClient();
  if (!client) return { status: 'error', message: 'Enter an API key with the admin scope first.' };
  let result;
  try {
    result = await client.PATCH('/v1/tenant', { body: input.value, signal: AbortSignal.timeout(API_TIMEOUT_MS), cache: 'no-store' });
  } catch (error) {
    return { status: 'error', message: `Nothing was saved: ${describeFetchFailure(error, API_TIMEOUT_MS)}.` };
  }
  const { response, error } = result;
  if (response.status === 400) {
    const parsed = validationBody.safeParse(error);
    const problems: TenantFormProblems = {};
    for (const p of parsed.success ? (parsed.data.error.details?.fields ?? []) : []) {
      const field = TENANT_FIELDS.find((f) => p.field === f || p.field.startsWith(`${f}.`));
      if (field) problems[field] = `${p.message}${p.field !== field ? ` (${p.field})` : ''}`;
    }
    return { status: 'error', message: Object.keys(problems).length > 0 ? 'Check the fields marked below.' : errorMessage(error, 'The API refused the settings.'), problems };
  }
  if (response.status === 401 || response.status === 403) {
    return { status: 'error', message: response.status === 403 ? 'Changing tenant settings needs the admin scope.' : `The API rejected the saved key: ${errorMessage(error, 'unauthorized')}.` };
  }
  if (!response.ok) return { status: 'error', message: `Nothing was saved: HTTP ${response.status}: ${errorMessage(error, response.statusText)}.` };
  revalidatePath('/settings');
  return { status: 'done', message: 'Tenant settings saved.' };
}
