import type { DependencyState, Readiness } from '../api/readiness';

function detail(dependency: DependencyState): string {
  if (dependency.error) return dependency.error;
  if (dependency.latencyMs !== undefined) return `${Math.round(dependency.latencyMs)} ms`;
  return '—';
}

export function ReadinessPanel({ readiness }: { readiness: Readiness }) {
  const summary =
    readiness.state === 'ready'
      ? 'The API, PostgreSQL and Redis are all answering.'
      : readiness.state === 'not_ready'
        ? readiness.message
        : 'Unknown: no readiness answer from the API.';
  const dependencies = readiness.state === 'ready' || readiness.state === 'not_ready' ? readiness.dependencies : [];

  return (
    <section className="card panel" aria-labelledby="readiness-heading">
      <header className="panel-header">
        <h2 id="readiness-heading">API readiness</h2>
        <code className="muted">{readiness.apiUrl}/health/ready</code>
      </header>
      <p className="panel-summary">{summary}</p>
      {dependencies.length > 0 && (
        <table className="data-table readiness-table">
          <thead>
            <tr>
              <th scope="col">Service</th>
              <th scope="col">Status</th>
              <th scope="col">Latency or error</th>
            </tr>
          </thead>
          <tbody>
            {dependencies.map((dependency) => (
              <tr key={dependency.name} data-testid={`readiness-${dependency.name}`}>
                <th scope="row">{dependency.label}</th>
                <td>
                  <span className="badge" data-state={dependency.up ? 'up' : 'down'}>
                    {dependency.up ? 'Up' : 'Down'}
                  </span>
                </td>
                <td className="detail">{detail(dependency)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
