import { formatTime } from "../format.ts";

/** A time in the browser's zone, with its exact instant for assistive tech and on hover. */
export function Time({ value }: { value: string | null | undefined }) {
  if (!value) return <span>—</span>;
  return (
    <time dateTime={value} title={value}>
      {formatTime(value)}
    </time>
  );
}
