import { loadReadiness } from '../api/load-readiness';
import { ReadinessPanel } from '../components/readiness-panel';

export default async function OverviewPage() {
  const readiness = await loadReadiness();
  return (
    <>
      <h1>Overview</h1>
      <p className="lead">
        Tokens saved, compactions and summarizer cost will appear here once sessions are being compacted.
      </p>
      <ReadinessPanel readiness={readiness} />
    </>
  );
}
