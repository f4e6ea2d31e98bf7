import { expect, type test as base } from '@playwright/test';

/** Makes every test of the file fail on a console error or an uncaught exception in the page. */
export function failOnConsoleErrors(test: typeof base): void {
  let problems: string[] = [];
  test.beforeEach(({ page }) => {
    problems = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  });
  test.afterEach(() => {
    expect(problems, 'errors in the browser console').toEqual([]);
  });
}
