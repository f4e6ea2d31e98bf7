/**
 * The providers' own error shapes by HTTP status: one mapping for everything that answers as a
 * provider (the proxy's own refusals, the fake upstream of the tests).
 */

/** Anthropic's `error.type` for a status (`{ type: 'error', error: { type, message } }`). */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 504:
      return 'timeout_error';
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

/** OpenAI's `error.type` and `error.code` for a status (`{ error: { message, type, code, param } }`). */
export function openaiErrorType(status: number): { type: string; code: string | null } {
  if (status === 401) return { type: 'invalid_request_error', code: 'invalid_api_key' };
  if (status === 429) return { type: 'requests', code: 'rate_limit_exceeded' };
  if (status >= 500) return { type: 'server_error', code: null };
  return { type: 'invalid_request_error', code: null };
}
