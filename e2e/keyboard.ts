import type { Page } from '@playwright/test';

/**
 * Tabs through the page until every visible focusable control was reached (or a lap too many):
 * how many there are, which were reached, and which showed no visible focus.
 */
export async function tabThroughControls(page: Page): Promise<{ total: number; reached: Set<string>; invisible: string[] }> {
  const total = await page.evaluate(() => {
    const focusable = Array.from(document.querySelectorAll<HTMLElement>('a[href], button:not([disabled]), input:not([type="hidden"]):not([disabled]), summary, [tabindex]:not([tabindex="-1"])')).filter(
      (el) => el.getClientRects().length > 0,
    );
    focusable.forEach((el, i) => el.setAttribute('data-kb', String(i)));
    return focusable.length;
  });
  const reached = new Set<string>();
  const invisible: string[] = [];
  for (let i = 0; i < total + 10 && reached.size < total; i++) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement | null;
      if (!el) return null;
      const style = getComputedStyle(el);
      const visible = (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0) || style.boxShadow !== 'none';
      return { id: el.getAttribute('data-kb'), visible, what: `${el.tagName} ${el.getAttribute('name') ?? el.textContent?.trim().slice(0, 30)}` };
    });
    if (focused?.id) {
      reached.add(focused.id);
      if (!focused.visible) invisible.push(focused.what);
    }
  }
  return { total, reached, invisible };
}
