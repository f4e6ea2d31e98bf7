import { FieldProblem, ValidationFailed } from '@compactor/compaction';
import { z } from 'zod';

/** `['messages', 3, 'content']` → `messages[3].content` */
export function fieldPath(path: readonly PropertyKey[], prefix = ''): string {
  let out = prefix;
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out || '(body)';
}

/** Parses with zod or throws a 400 that names every bad field. */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, prefix = ''): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw validationFailed(result.error, prefix);
}

/** The 400 for a zod error: one problem per issue, naming its field. */
export function validationFailed(error: z.ZodError, prefix = ''): ValidationFailed {
  const problems: FieldProblem[] = error.issues.map((issue) => ({ field: fieldPath(issue.path, prefix), message: issue.message }));
  return new ValidationFailed(problems);
}

export const SESSION_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

export const sessionIdSchema = z
  .string()
  .regex(SESSION_ID_PATTERN, 'must be 1-128 characters of letters, digits, ".", "_", ":" or "-"');

export function parseSessionId(value: unknown): string {
  return parseOrThrow(sessionIdSchema, value, 'sessionId');
}
