import { useEffect, useState } from "react";
import { errorText, get } from "../api/client.ts";
import type { CronPreview as Preview } from "../api/types.ts";
import { formatTimeIn } from "../format.ts";

/**
 * The next 5 firing times of an expression in its time zone, asked of the API as the user types
 * (debounced), so the preview is the scheduler's own reading of the expression.
 */
export function CronPreview({ expression, timezone }: { expression: string; timezone: string }) {
  const [preview, setPreview] = useState<Preview>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    let current = true;
    const timer = window.setTimeout(() => {
      get<Preview>("/api/cron-jobs/preview", { expression, timezone: timezone || "UTC", count: 5 }).then(
        (answer) => {
          if (!current) return;
          setPreview(answer);
          setError(undefined);
        },
        (failure: unknown) => {
          if (!current) return;
          setPreview(undefined);
          setError(errorText(failure));
        },
      );
    }, 250);
    return () => {
      current = false;
      window.clearTimeout(timer);
    };
  }, [expression, timezone]);

  return (
    <section className="preview" aria-labelledby="cron-preview-title" aria-live="polite">
      <h3 id="cron-preview-title">Next firing times</h3>
      {error && (
        <p className="message message-error">
          <span aria-hidden="true">⚠ </span>
          {error}
        </p>
      )}
      {preview?.neverFires && (
        <p className="message message-warning">
          <span aria-hidden="true">⚠ </span>
          This expression never fires: no date matches it.
        </p>
      )}
      {preview && !preview.neverFires && (
        <ol className="preview-times">
          {preview.times.map((time) => (
            <li key={time}>
              <time dateTime={time}>{formatTimeIn(time, preview.timezone)}</time>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
