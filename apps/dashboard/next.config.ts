import type { NextConfig } from 'next';

/**
 * The dashboard's Content-Security-Policy (issue #15 F13). Everything is served by the dashboard
 * itself (no CDN, no external fonts; the API is read on the server), so `'self'` suffices. The App
 * Router streams its payload in inline scripts and recharts draws with inline styles, hence
 * `'unsafe-inline'` for both (a nonce would force dynamic rendering of every page); `next dev`
 * also needs `'unsafe-eval'`. No page may be framed (`frame-ancestors 'none'`: clickjacking).
 */
export function contentSecurityPolicy(development: boolean): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'unsafe-inline'${development ? " 'unsafe-eval'" : ''}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export function securityHeaders(development: boolean): { key: string; value: string }[] {
  return [
    { key: 'Content-Security-Policy', value: contentSecurityPolicy(development) },
    // For browsers that predate frame-ancestors.
    { key: 'X-Frame-Options', value: 'DENY' },
    { key: 'X-Content-Type-Options', value: 'nosniff' },
    { key: 'Referrer-Policy', value: 'same-origin' },
  ];
}

const nextConfig: NextConfig = {
  poweredByHeader: false,
  reactStrictMode: true,
  async headers() {
    // Next sets NODE_ENV itself (development under `next dev`, production for build and start).
    return [{ source: '/:path*', headers: securityHeaders(process.env.NODE_ENV !== 'production') }];
  },
};

export default nextConfig;
