import Link from 'next/link';

export default function NotFound() {
  return (
    <>
      <h1>Page not found</h1>
      <p className="lead">
        There is nothing at this address. Go back to the <Link href="/">Overview</Link>.
      </p>
    </>
  );
}
