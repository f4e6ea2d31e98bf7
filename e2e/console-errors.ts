import { expect, type test as base } from '@playwright/test';

/** The page answered 404 on purpose (an unknown session): the browser logs the status as a console error. */
let expected404 = false;

/** For a test that opens a page which must answer 404: the browser's own "status of 404" line is not an error of the page. */
export function expectNotFoundPage(): void {
  expected404 = true;
}

/** Makes every test of the file fail on a console error or an uncaught exception in the page. */
export function failOnConsoleErrors(test: typeof base): void {
  let problems: string[] = [];
  test.beforeEach(({ page }) => {
    problems = [];
    expected404 = false;
    page.on('console', (message) => {
      if (message.type() !== 'error') return;
      if (expected404 && message.text().includes('the server responded with a status of 404')) return;
      problems.push(`console: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  });
  test.afterEach(() => {
    expect(problems, 'errors in the browser console').toEqual([]);
  });
}
