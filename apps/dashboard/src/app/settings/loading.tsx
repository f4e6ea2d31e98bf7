import { PageSkeleton } from '../../components/overview/page-skeleton';

export default function SettingsLoading() {
  return <PageSkeleton label="Loading settings…" blocks={4} />;
}
