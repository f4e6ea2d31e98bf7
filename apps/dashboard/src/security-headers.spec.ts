import nextConfig, { contentSecurityPolicy } from '../next.config';

describe('the dashboard security headers', () => {
  it('sends a CSP on every path that forbids framing and foreign origins', async () => {
    const rules = await nextConfig.headers!();
    expect(rules).toHaveLength(1);
    expect(rules[0].source).toBe('/:path*');
    const csp = rules[0].headers.find((h) => h.key === 'Content-Security-Policy')?.value ?? '';
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("object-src 'none'");
    expect(rules[0].headers).toContainEqual({ key: 'X-Frame-Options', value: 'DENY' });
  });

  it("allows eval only in development (next dev's tooling)", () => {
    expect(contentSecurityPolicy(false)).not.toContain('unsafe-eval');
    expect(contentSecurityPolicy(true)).toContain("'unsafe-eval'");
    expect(contentSecurityPolicy(false)).not.toMatch(/https?:|\*/);
  });
});
