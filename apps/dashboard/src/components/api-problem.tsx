import type { Readiness } from '../api/readiness';

/** Shown on every page when the API cannot answer, so no page pretends to have data. */
export function ApiProblem({ readiness }: { readiness: Readiness }) {
  if (readiness.state === 'unreachable') {
    return (
      <div className="notice notice-error" role="alert">
        <strong>API unreachable at {readiness.apiUrl}</strong>
        <span>
          {readiness.reason}. Start the API with <code>npm start</code>, or point <code>COMPACTOR_API_URL</code> at a
          running one.
        </span>
      </div>
    );
  }
  if (readiness.state === 'unexpected') {
    return (
      <div className="notice notice-error" role="alert">
        <strong>Unexpected answer from the API at {readiness.apiUrl}</strong>
        <span>{readiness.reason}. Check that the dashboard and the API are the same version.</span>
      </div>
    );
  }
  return null;
}
