import { formatAgo, formatTime } from "../format.ts";

/** A time in the browser's zone, with its exact instant for assistive tech and on hover. */
export function Time({ value }: { value: string | null | undefined }) {
  if (!value) return <span>—</span>;
  return (
    <time dateTime={value} title={value}>
      {formatTime(value)}
    </time>
  );
}

/** How long ago a time was (`3 min ago`), with the time itself in the browser's zone on hover. */
export function Ago({ value, now }: { value: string | null | undefined; now?: number }) {
  if (!value) return <span>—</span>;
  return (
    <time dateTime={value} title={formatTime(value)}>
      {formatAgo(value, now)}
    </time>
  );
}
