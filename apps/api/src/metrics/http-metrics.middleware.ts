import type { NextFunction, Request, Response } from 'express';
import { MetricsService } from './metrics.service';

/** Observes every request's duration, labelled by the matched route (not the raw URL, to bound cardinality). */
export function httpMetricsMiddleware(metrics: MetricsService) {
  return (req: Request, res: Response, next: NextFunction) => {
    const end = metrics.httpDuration.startTimer();
    res.on('finish', () => {
      const route = req.route?.path ? `${req.baseUrl}${req.route.path}` : 'unmatched';
      end({ method: req.method, route, status: String(res.statusCode) });
    });
    next();
  };
}
