import { useEffect, useId, useState } from "react";
import { errorText } from "../../api/client.ts";
import type { CronPreviewQuery, CronPreview as Preview } from "../../api/types.ts";
import { formatTimeIn } from "../../format.ts";
import { previewCronJob } from "./cron-calls.ts";
import { type CronForm, previewQueryOfForm } from "./cron-form.ts";
import { type PreviewReading, readPreview } from "./preview-notes.ts";

/** How long the form rests before the preview is asked again. */
const DEBOUNCE_MS = 300;

/** Whether the firings need their seconds to be told apart (six fields, an interval of seconds). */
const withSeconds = (reading: PreviewReading) => reading.firings.some((firing) => Date.parse(firing.at) % 60_000 !== 0);

/** What the preview shows: the reading of an answer, or why there is none. */
export type PreviewState =
  | { kind: "idle"; hint: string }
  | { kind: "problem"; problem: string }
  | { kind: "loading" }
  | { kind: "error"; error: string }
  | { kind: "answer"; reading: PreviewReading; timezone: string };

/** The preview's content for a state; `note` is said under it (e.g. that the job keeps its timing). */
export function PreviewView({ state, note }: { state: PreviewState; note?: string | undefined }) {
  const titleId = useId();
  const seconds = state.kind === "answer" && withSeconds(state.reading);
  return (
    <section className="preview" aria-labelledby={titleId} aria-live="polite">
      <h3 id={titleId}>Next firing times</h3>
      {state.kind === "idle" && <p className="hint">{state.hint}</p>}
      {state.kind === "loading" && <p className="loading">Reading the schedule…</p>}
      {(state.kind === "problem" || state.kind === "error") && (
        <p className="message message-error">
          <span aria-hidden="true">⚠ </span>
          {state.kind === "problem" ? state.problem : state.error}
        </p>
      )}
      {state.kind === "answer" && state.reading.nothingFires && (
        <p className="message message-warning">
          <span aria-hidden="true">⚠ </span>
          {state.reading.nothingFires}
        </p>
      )}
      {state.kind === "answer" && state.reading.firings.length > 0 && (
        <ol className="preview-times">
          {state.reading.firings.map(({ at, run }) => (
            <li key={at} className={run === null ? "no-run" : undefined}>
              <time dateTime={at}>{formatTimeIn(at, state.timezone, { seconds })}</time>
              {run === null && <span className="hint"> no run: past the run limit</span>}
            </li>
          ))}
        </ol>
      )}
      {state.kind === "answer" && state.reading.notes.length > 0 && (
        <ul className="preview-notes">
          {state.reading.notes.map((text) => (
            <li key={text}>{text}</li>
          ))}
        </ul>
      )}
      {note && <p className="hint">{note}</p>}
    </section>
  );
}

/**
 * The next firing times of the form's timing, asked of the API as the user types (debounced), so
 * the preview is the scheduler's own reading; with what the window, the run limit and the jitter do.
 */
export function CronPreview({
  form,
  editing = false,
  firingTimesKept = false,
  note,
}: {
  form: CronForm;
  /** The form edits an existing job (see readPreview). */
  editing?: boolean;
  /** A save keeps the job's firing times (see readPreview). */
  firingTimesKept?: boolean;
  note?: string | undefined;
}) {
  const asked = previewQueryOfForm(form);
  const key = JSON.stringify(asked);
  const [answer, setAnswer] = useState<{ query: CronPreviewQuery; preview?: Preview; error?: string }>();
  useEffect(() => {
    const current: { query?: CronPreviewQuery } = JSON.parse(key);
    const { query } = current;
    if (!query) return undefined;
    let live = true;
    const timer = window.setTimeout(() => {
      previewCronJob(query).then(
        (preview) => live && setAnswer({ query, preview }),
        (failure: unknown) => live && setAnswer({ query, error: errorText(failure) }),
      );
    }, DEBOUNCE_MS);
    return () => {
      live = false;
      window.clearTimeout(timer);
    };
  }, [key]);

  let state: PreviewState;
  if ("empty" in asked) state = { kind: "idle", hint: asked.empty };
  else if ("problem" in asked) state = { kind: "problem", problem: asked.problem };
  // While the next answer is asked, the last one stays (no flicker as the user types).
  else if (!answer) state = { kind: "loading" };
  else if (answer.preview) {
    state = {
      kind: "answer",
      reading: readPreview(answer.preview, answer.query, { editing, firingTimesKept }),
      timezone: answer.preview.timezone,
    };
  } else state = { kind: "error", error: answer.error ?? "The preview could not be read" };
  return <PreviewView state={state} note={note} />;
}
