import type { Readiness } from '../api/readiness';

const TEXT: Record<Readiness['state'], string> = {
  ready: 'API ready',
  not_ready: 'API not ready',
  unreachable: 'API unreachable',
  unexpected: 'API error',
};

/** The header's one-glance status; the words carry the meaning, the dot only repeats it. */
export function ApiStatus({ readiness }: { readiness: Readiness }) {
  return (
    <p className="api-status" data-state={readiness.state} title={readiness.apiUrl}>
      <span className="status-dot" aria-hidden="true" />
      {TEXT[readiness.state]}
    </p>
  );
}
