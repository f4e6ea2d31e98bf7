import Link from 'next/link';
import { formatTokens } from '../../lib/session-format';
import {
  historyAfterFor,
  messageAnchor,
  PROTECTION_LABELS,
  STATUS_LABELS,
  type BlockView,
  type ContextRow,
  type HistoryRow,
  type HistoryStatus,
  type HistoryWindow,
  type ProtectionReason,
  type Treatment,
} from '../../lib/session-history';
import styles from './session.module.css';

const artifactHref = (id: string) => `/api/artifacts/${encodeURIComponent(id)}`;

function Blocks({ blocks, fullHref }: { blocks: BlockView[]; fullHref: string | null }) {
  return (
    <div className={styles.blocks}>
      {blocks.map((b, i) => {
        const more =
          b.omitted > 0 ? (
            <p className={styles.omitted}>
              … {formatTokens(b.omitted)} more characters.{' '}
              {fullHref ? (
                <a href={fullHref} target="_blank" rel="noopener">
                  Whole message as JSON
                </a>
              ) : null}
            </p>
          ) : null;
        const artifacts =
          b.artifactIds.length > 0 ? (
            <p className={styles.omitted}>
              {b.artifactIds.map((id) => (
                <a key={id} href={artifactHref(id)} target="_blank" rel="noopener" className={styles.artifactLink}>
                  Offloaded output {id}
                </a>
              ))}
            </p>
          ) : null;
        return b.collapsed ? (
          <details key={i} className={styles.block} data-kind={b.kind} data-error={b.isError || undefined}>
            <summary>
              {b.title} · {b.lines} lines
            </summary>
            <pre className={styles.pre}>
              <code>{b.body}</code>
            </pre>
            {more}
            {artifacts}
          </details>
        ) : (
          <div key={i} className={styles.block} data-kind={b.kind} data-error={b.isError || undefined}>
            <span className={styles.blockTitle}>{b.title}</span>
            <pre className={styles.pre}>
              <code>{b.body}</code>
            </pre>
            {more}
            {artifacts}
          </div>
        );
      })}
    </div>
  );
}

function Protections({ reasons }: { reasons: ProtectionReason[] }) {
  return (
    <>
      {reasons.map((r) => (
        <span key={r} className={styles.tagProtected} data-protection={r}>
          🛡 {PROTECTION_LABELS[r]}
        </span>
      ))}
    </>
  );
}

function TreatmentTag({ treatment }: { treatment: Treatment | HistoryStatus }) {
  switch (treatment.kind) {
    case 'verbatim':
      return <span className={styles.tagOk}>{STATUS_LABELS.verbatim}</span>;
    case 'masked':
      return <span className={styles.tagWarn}>Masked</span>;
    case 'compressed':
      return <span className={styles.tagWarn}>Compressed</span>;
    case 'offloaded':
      return (
        <span className={styles.tagWarn}>
          Offloaded
          {treatment.artifactIds.map((id) => (
            <a key={id} href={artifactHref(id)} target="_blank" rel="noopener" className={styles.tagLink} data-testid="artifact-link">
              {id}
            </a>
          ))}
        </span>
      );
    case 'summarized':
      return (
        <span className={styles.tagInfo}>
          Summarized in{' '}
          <a href={`#${'anchor' in treatment ? treatment.anchor : ''}`} className={styles.tagLink} data-testid="checkpoint-link">
            {treatment.checkpointId}
          </a>
        </span>
      );
    case 'dropped':
      return <span className={styles.tagBad}>Dropped</span>;
    case 'left-out':
      return <span className={styles.tagBad}>Left out: {treatment.reason}</span>;
    case 'not-sent':
      return <span className={styles.tagBad}>Not sent: {treatment.reason}</span>;
  }
}

export interface ContextSummary {
  version: number | null;
  tokens: number;
  budget: number;
  messages: number;
  fallback: string | null;
}

function ContextColumn({ rows, summary, sessionHref, messageCount }: { rows: ContextRow[]; summary: ContextSummary; sessionHref: string; messageCount: number }) {
  return (
    <div className={styles.column} data-testid="context-column" data-context-version={summary.version ?? 'none'}>
      <h3 id="context-heading" className={styles.columnHeading}>
        Context as sent
      </h3>
      <p className={styles.columnMeta}>
        {summary.version === null ? 'Version: none yet (the whole history)' : `Version ${summary.version}`} · {summary.messages} messages · {formatTokens(summary.tokens)} of{' '}
        {formatTokens(summary.budget)} tokens
      </p>
      {summary.fallback ? (
        <p className={styles.warning} role="note">
          Budget fallback applied: {summary.fallback}
        </p>
      ) : null}
      <div className={styles.columnScroll} tabIndex={0} role="region" aria-label="Context messages">
      <ol className={styles.messageList} aria-labelledby="context-heading">
        {rows.map((r) => (
          <li key={r.index} className={styles.message} data-kind={r.kind} data-role={r.role} data-seq={r.seq} data-testid="context-message">
            <div className={styles.messageHead}>
              {r.kind === 'checkpoint' && r.checkpoint ? (
                <span className={styles.tagInfo}>
                  Checkpoint{' '}
                  <a href={`#${r.checkpoint.anchor}`} className={styles.tagLink}>
                    {r.checkpoint.id}
                  </a>
                </span>
              ) : r.kind === 'goal' ? (
                <strong className={styles.role}>Goal block</strong>
              ) : (
                <>
                  <strong className={styles.role}>{r.role}</strong>
                  {r.seq > 0 ? (
                    <Link href={`${sessionHref}?after=${historyAfterFor(r.seq, messageCount)}#${messageAnchor(r.seq)}`} scroll={false} className={styles.seqLink}>
                      #{r.seq}
                    </Link>
                  ) : null}
                </>
              )}
              {r.treatment ? <TreatmentTag treatment={r.treatment} /> : null}
              <Protections reasons={r.protections} />
            </div>
            <Blocks blocks={r.blocks} fullHref={null} />
          </li>
        ))}
      </ol>
      </div>
    </div>
  );
}

function HistoryPager({ window, sessionHref, position }: { window: HistoryWindow; sessionHref: string; position: 'top' | 'bottom' }) {
  const link = (after: number | null, text: string, rel?: string) =>
    after === null ? null : (
      <li>
        <Link href={`${sessionHref}?after=${after}#history-heading`} scroll={false} rel={rel}>
          {text}
        </Link>
      </li>
    );
  if (window.total <= window.to - window.from + 1) return null;
  return (
    <nav className={styles.pager} aria-label={`History pages (${position})`}>
      <ul>
        {link(window.firstAfter, 'First')}
        {link(window.olderAfter, '← Older', 'prev')}
        {link(window.newerAfter, 'Newer →', 'next')}
        {link(window.latestAfter, 'Latest')}
      </ul>
    </nav>
  );
}

function HistoryColumn({ rows, window, sessionHref, messageHref }: { rows: HistoryRow[]; window: HistoryWindow; sessionHref: string; messageHref: (seq: number) => string }) {
  return (
    <div className={styles.column} data-testid="history-column">
      <h3 id="history-heading" className={styles.columnHeading}>
        Full history
      </h3>
      <p className={styles.columnMeta} data-testid="history-range">
        {window.total === 0 ? 'No messages yet.' : `Messages ${window.from}–${window.to} of ${window.total}, exactly as appended`}
      </p>
      <HistoryPager window={window} sessionHref={sessionHref} position="top" />
      <div className={styles.columnScroll} tabIndex={0} role="region" aria-label="History messages">
      <ol className={styles.messageList} aria-labelledby="history-heading">
        {rows.map((r) => (
          <li key={r.seq} id={r.anchor} className={styles.message} data-role={r.role} data-seq={r.seq} data-status={r.status.kind} data-testid="history-message" tabIndex={-1}>
            <div className={styles.messageHead}>
              <strong className={styles.role}>{r.role}</strong>
              <span className={styles.seq}>#{r.seq}</span>
              <span className="muted">{r.tokensText}</span>
              <TreatmentTag treatment={r.status} />
              <Protections reasons={r.protections} />
            </div>
            <Blocks blocks={r.blocks} fullHref={messageHref(r.seq)} />
          </li>
        ))}
      </ol>
      </div>
      <HistoryPager window={window} sessionHref={sessionHref} position="bottom" />
    </div>
  );
}

/** The context as sent beside the full history: what was masked, offloaded, summarized, left out or protected. */
export function ContextHistory({
  sessionId,
  sessionHref,
  context,
  contextError,
  history,
  historyError,
  window,
  messageCount,
}: {
  sessionId: string;
  sessionHref: string;
  context: { rows: ContextRow[]; summary: ContextSummary } | null;
  contextError: string | null;
  history: HistoryRow[];
  historyError: string | null;
  window: HistoryWindow;
  messageCount: number;
}) {
  const messageHref = (seq: number) => `/api/sessions/${encodeURIComponent(sessionId)}/messages/${seq}`;
  return (
    <section className={`card ${styles.panel}`} aria-labelledby="context-history-heading" data-testid="context-history">
      <header className={styles.panelHeader}>
        <h2 id="context-history-heading">Context and history</h2>
      </header>
      <p className={styles.legend}>
        <span className={styles.tagOk}>In context</span> sent as appended · <span className={styles.tagWarn}>Masked / Offloaded</span> output replaced by a note or a
        reference · <span className={styles.tagInfo}>Summarized</span> in a checkpoint · <span className={styles.tagProtected}>🛡 Protected</span> never summarized or removed
      </p>
      <div className={styles.columns}>
        {context ? (
          <ContextColumn rows={context.rows} summary={context.summary} sessionHref={sessionHref} messageCount={messageCount} />
        ) : (
          <div className={styles.column}>
            <h3 className={styles.columnHeading}>Context as sent</h3>
            <p className={styles.warning} role="alert">
              {contextError}
            </p>
          </div>
        )}
        {historyError ? (
          <div className={styles.column}>
            <h3 className={styles.columnHeading}>Full history</h3>
            <p className={styles.warning} role="alert">
              {historyError}
            </p>
          </div>
        ) : (
          <HistoryColumn rows={history} window={window} sessionHref={sessionHref} messageHref={messageHref} />
        )}
      </div>
    </section>
  );
}
