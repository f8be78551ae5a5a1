import type { CallbackState } from "../api/types.ts";
import { ScrollBox } from "../components/scroll-box.tsx";
import { Time } from "../components/time.tsx";

/** The last answer to a callback in a few words: the receiver's status, else the error, else none yet. */
export function callbackAnswer(callback: CallbackState): string {
  if (callback.lastResponseStatus !== null) return `HTTP ${callback.lastResponseStatus}`;
  return callback.lastError ?? "none yet";
}

/** What became of the callback of a delivery's final outcome: its status, attempts and last answer. */
export function CallbackOutcome({ callback }: { callback: CallbackState }) {
  return (
    <>
      <dl className="details">
        <div>
          <dt>Callback</dt>
          <dd>
            {callback.status} ({callback.type})
          </dd>
        </div>
        <div>
          <dt>To</dt>
          <dd className="url">{callback.url}</dd>
        </div>
        <div>
          <dt>Attempts</dt>
          <dd>{callback.attempts}</dd>
        </div>
        {callback.lastAttemptAt && (
          <div>
            <dt>Last attempt</dt>
            <dd>
              <Time value={callback.lastAttemptAt} />
            </dd>
          </div>
        )}
        <div>
          <dt>Last answer</dt>
          <dd>{callbackAnswer(callback)}</dd>
        </div>
      </dl>
      {callback.lastResponseBody && <ScrollBox label="Answer to the callback" text={callback.lastResponseBody} />}
    </>
  );
}
