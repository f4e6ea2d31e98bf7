import { renderToStaticMarkup } from 'react-dom/server';
import type { Readiness } from '../api/readiness';
import { ApiProblem } from './api-problem';
import { ApiStatus } from './api-status';
import { ReadinessPanel } from './readiness-panel';

const API = 'http://127.0.0.1:3000';

const text = (html: string) => html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim();

/** The table's rows as cell texts, header row first. */
function rows(html: string): string[][] {
  return [...html.matchAll(/<tr[^>]*>(.*?)<\/tr>/g)].map(([, row]) =>
    [...row.matchAll(/<t[hd][^>]*>(.*?)<\/t[hd]>/g)].map(([, cell]) => text(cell)),
  );
}

const notReady: Readiness = {
  state: 'not_ready',
  apiUrl: API,
  message: 'Not ready: redis is unreachable',
  dependencies: [
    { name: 'postgres', label: 'PostgreSQL', up: true, latencyMs: 2.4 },
    { name: 'redis', label: 'Redis', up: false, error: 'connect ECONNREFUSED 127.0.0.1:6379' },
  ],
};
const unreachable: Readiness = { state: 'unreachable', apiUrl: API, reason: 'connect ECONNREFUSED 127.0.0.1:3000' };

describe('ReadinessPanel', () => {
  it('shows each dependency with its latency when ready', () => {
    const html = renderToStaticMarkup(
      <ReadinessPanel
        readiness={{
          state: 'ready',
          apiUrl: API,
          dependencies: [
            { name: 'postgres', label: 'PostgreSQL', up: true, latencyMs: 3 },
            { name: 'redis', label: 'Redis', up: true, latencyMs: 1 },
          ],
        }}
      />,
    );
    expect(rows(html)).toEqual([
      ['Service', 'Status', 'Latency or error'],
      ['PostgreSQL', 'Up', '3 ms'],
      ['Redis', 'Up', '1 ms'],
    ]);
  });

  it('names the dependency that is down and why', () => {
    const html = renderToStaticMarkup(<ReadinessPanel readiness={notReady} />);
    expect(text(html)).toContain('Not ready: redis is unreachable');
    expect(rows(html).slice(1)).toEqual([
      ['PostgreSQL', 'Up', '2 ms'],
      ['Redis', 'Down', 'connect ECONNREFUSED 127.0.0.1:6379'],
    ]);
  });

  it('shows no table when the API gave no answer', () => {
    const html = renderToStaticMarkup(<ReadinessPanel readiness={unreachable} />);
    expect(rows(html)).toEqual([]);
    expect(text(html)).toContain('Unknown: no readiness answer from the API.');
  });
});

describe('ApiProblem', () => {
  it('names the URL and the reason when the API is unreachable', () => {
    const html = renderToStaticMarkup(<ApiProblem readiness={unreachable} />);
    expect(html).toContain('role="alert"');
    expect(text(html)).toContain(`API unreachable at ${API} connect ECONNREFUSED 127.0.0.1:3000.`);
  });

  it('reports an answer that breaks the contract', () => {
    const html = renderToStaticMarkup(<ApiProblem readiness={{ state: 'unexpected', apiUrl: API, reason: 'HTTP 500 Internal Server Error' }} />);
    expect(text(html)).toContain(`Unexpected answer from the API at ${API} HTTP 500 Internal Server Error.`);
  });

  it('stays out of the way when the API answers', () => {
    expect(renderToStaticMarkup(<ApiProblem readiness={notReady} />)).toBe('');
  });
});

describe('ApiStatus', () => {
  it.each([
    ['API ready', { state: 'ready', apiUrl: API, dependencies: [] }],
    ['API not ready', notReady],
    ['API unreachable', unreachable],
    ['API error', { state: 'unexpected', apiUrl: API, reason: 'HTTP 500' }],
  ] satisfies [string, Readiness][])('says "%s" in words', (words, readiness) => {
    const html = renderToStaticMarkup(<ApiStatus readiness={readiness} />);
    expect(text(html)).toBe(words);
    expect(html).toContain(`data-state="${readiness.state}"`);
  });
});
