'use server';

import { z } from 'zod';
import { apiCall, type ActionResult } from '../../../lib/session-api';
import { authedClient } from '../../../server/api-key';

// Server actions are public endpoints: every argument is checked before it reaches the API.
const sessionId = z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/);
const uuid = z.string().regex(/^[0-9a-fA-F-]{36}$/);
const label = z.string().trim().max(200);

const NO_KEY: ActionResult = { ok: false, message: 'No API key: enter one in Settings.' };
const BAD_INPUT: ActionResult = { ok: false, message: 'That request is not valid.' };

/** POST /v1/sessions/:id/compact: queues a manual compaction (the preview dialog's Apply); the events list shows it run. */
export async function compactNowAction(id: string): Promise<ActionResult> {
  if (!sessionId.safeParse(id).success) return BAD_INPUT;
  const client = await authedClient();
  if (!client) return NO_KEY;
  const result = await apiCall(() => client.POST('/v1/sessions/{id}/compact', { params: { path: { id } }, body: { dryRun: false, format: 'canonical' } }));
  if (!result.ok) return { ok: false, message: result.failure.message };
  return { ok: true, message: `Compaction queued (job ${result.data.job.id.slice(0, 8)}). Its progress appears under Events.` };
}

/** POST /v1/sessions/:id/snapshots with an optional label. */
export async function createSnapshotAction(id: string, rawLabel: string): Promise<ActionResult> {
  const parsedLabel = label.safeParse(rawLabel);
  if (!sessionId.safeParse(id).success || !parsedLabel.success) return BAD_INPUT;
  const client = await authedClient();
  if (!client) return NO_KEY;
  const body = parsedLabel.data ? { label: parsedLabel.data } : {};
  const result = await apiCall(() => client.POST('/v1/sessions/{id}/snapshots', { params: { path: { id } }, body }));
  if (!result.ok) return { ok: false, message: result.failure.message };
  return { ok: true, message: `Snapshot created${parsedLabel.data ? ` (“${parsedLabel.data}”)` : ''}: it pins version ${result.data.version}.` };
}

/** POST /v1/sessions/:id/snapshots/:snapshotId/restore: a new head equal to the snapshot's version. */
export async function restoreSnapshotAction(id: string, snapshotId: string): Promise<ActionResult> {
  if (!sessionId.safeParse(id).success || !uuid.safeParse(snapshotId).success) return BAD_INPUT;
  const client = await authedClient();
  if (!client) return NO_KEY;
  const result = await apiCall(() => client.POST('/v1/sessions/{id}/snapshots/{snapshotId}/restore', { params: { path: { id, snapshotId } } }));
  if (!result.ok) return { ok: false, message: result.failure.message };
  return { ok: true, message: `Restored: version ${result.data.version} now holds the snapshot's version ${result.data.restoredVersion}.` };
}

/** POST /v1/sessions/:id/compactions/:jobId/undo: restores the snapshot taken before that compaction. */
export async function undoCompactionAction(id: string, jobId: string): Promise<ActionResult> {
  if (!sessionId.safeParse(id).success || !uuid.safeParse(jobId).success) return BAD_INPUT;
  const client = await authedClient();
  if (!client) return NO_KEY;
  const result = await apiCall(() => client.POST('/v1/sessions/{id}/compactions/{jobId}/undo', { params: { path: { id, jobId } } }));
  if (!result.ok) return { ok: false, message: result.failure.message };
  return { ok: true, message: `Compaction undone: version ${result.data.version} restores version ${result.data.restoredVersion}.` };
}
