import type { ApiAccess } from './api-access';
import { LimitsForm } from './limits-form';
import { limitsInForce } from './limits-view';
import type { CallerView, TenantSettings } from './settings-schema';
import { adminOnly } from './settings-sections';
import styles from './settings.module.css';

/** The tenant's limits in force (its own or the operator's default), editable by an admin key. */
export function LimitsSection({ caller, tenant }: { caller: ApiAccess<CallerView>; tenant: ApiAccess<TenantSettings> | null }) {
  const problem = adminOnly(caller, tenant, "the tenant's limits");
  return (
    <section className={`card ${styles.section}`} aria-labelledby="limits-heading">
      <h2 id="limits-heading">Limits</h2>
      {problem ?? (tenant?.state === 'ok' && (
        <>
          <p className={styles.hint}>
            Rate limits count every API and proxy request of a minute across all API replicas; over one, the API answers 429 with <code>Retry-After</code>. Summarizer caps hold compactions for the rest of the UTC day; retention deletes idle sessions. Every change is in the audit log.
          </p>
          <LimitsForm limits={limitsInForce(tenant.data)} />
        </>
      ))}
    </section>
  );
}
