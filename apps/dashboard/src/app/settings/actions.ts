'use server';

import { revalidatePath } from 'next/cache';
import { headers } from 'next/headers';
import { readWith, readWithSavedKey } from '../../components/settings/api-access';
import { callerSchema, createdApiKeySchema, revokedApiKeySchema } from '../../components/settings/settings-schema';
import { parseKeyInput, parseNewKeyForm } from '../../components/settings/settings-view';
import { clearApiKey, clientWithKey, storeApiKey } from '../../server/api-key';

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
  created?: { id: string; name: string; prefix: string; scopes: string[]; secret: string };
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
  const input = parseNewKeyForm(form.get('name'), form.getAll('scopes'));
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
  const { id, name, prefix, scopes, key } = result.data;
  return { status: 'done', message: `Key “${name}” created.`, created: { id, name, prefix, scopes, secret: key } };
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
