import { PageSkeleton } from '../../components/overview/page-skeleton';

/** Shown while a page's server component waits for the API (the Overview's summary, mostly). */
export default function Loading() {
  return <PageSkeleton label="Loading…" />;
}
