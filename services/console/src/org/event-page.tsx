import { type FormEvent, useState } from "react";
import { get, post, put } from "../api/client.ts";
import type { Attempt, DeliveryEvent, DeliveryEventWithHistory } from "../api/types.ts";
import { Dialog, DialogActions } from "../components/dialog.tsx";
import { ErrorMessage, Loading, Notice } from "../components/messages.tsx";
import { ScrollBox } from "../components/scroll-box.tsx";
import { StatusBadge } from "../components/status-badge.tsx";
import { Time } from "../components/time.tsx";
import { formatDuration, isoToLocalInput, LOCAL_ZONE, localInputToIso } from "../format.ts";
import { Link, navigate } from "../router.tsx";
import { useAction } from "../use-action.ts";
import { useLoad } from "../use-load.ts";
import { CallbackOutcome } from "./callback-outcome.tsx";
import { FlowDetail } from "./flows/flow-link.tsx";
import { CallbackUrlDetail, LabelsDetail } from "./outcome-details.tsx";
import { PolicyDetails } from "./policy/policy-details.tsx";

const REPLAYABLE = new Set(["Sent", "Failed To Send", "Failed To Queue"]);

/** A JSON payload indented for reading; anything else as it is. */
function prettyPayload(payload: string): string {
  try {
    return JSON.stringify(JSON.parse(payload), null, 2);
  } catch {
    return payload;
  }
}

function Attempts({ history }: { history: readonly Attempt[] }) {
  if (history.length === 0) return <p>No delivery attempt yet.</p>;
  return (
    <ol className="timeline">
      {history.map((attempt) => {
        const ok = attempt.error === null && attempt.responseStatus !== null && attempt.responseStatus < 300;
        return (
          <li key={attempt.attempt} className={ok ? "ok" : "bad"}>
            <span className="marker" aria-hidden="true">
              {ok ? "✓" : "✕"}
            </span>
            <div>
              <p className="timeline-title">
                Attempt {attempt.attempt}: {ok ? "delivered" : "failed"}
              </p>
              <dl className="inline-dl">
                <div>
                  <dt>At</dt>
                  <dd>
                    <Time value={attempt.at} />
                  </dd>
                </div>
                <div>
                  <dt>Response</dt>
                  <dd>{attempt.responseStatus ?? "none"}</dd>
                </div>
                <div>
                  <dt>Duration</dt>
                  <dd>{formatDuration(attempt.durationMs)}</dd>
                </div>
                {attempt.error && (
                  <div>
                    <dt>Error</dt>
                    <dd>{attempt.error}</dd>
                  </div>
                )}
              </dl>
              {attempt.responseBody === "" && <p className="hint">The receiver answered with an empty body.</p>}
              {attempt.responseBody && (
                <ScrollBox label={`Answer to attempt ${attempt.attempt}`} text={attempt.responseBody} />
              )}
            </div>
          </li>
        );
      })}
    </ol>
  );
}

function Reschedule({ event, onSaved }: { event: DeliveryEvent; onSaved: (event: DeliveryEvent) => void }) {
  const [open, setOpen] = useState(false);
  const [when, setWhen] = useState(isoToLocalInput(event.scheduledTime));
  const { error, setError, run } = useAction();
  const submit = (submitted: FormEvent) => {
    submitted.preventDefault();
    const scheduledTime = localInputToIso(when);
    if (!scheduledTime) return setError("Please enter a valid time");
    return run(async () => {
      onSaved(await put<DeliveryEvent>(`/api/events/${event.id}`, { scheduledTime }));
      setOpen(false);
    });
  };
  return (
    <>
      <button type="button" onClick={() => setOpen(true)}>
        Reschedule
      </button>
      <Dialog title="Reschedule the event" open={open} onClose={() => setOpen(false)}>
        <form onSubmit={submit}>
          <label htmlFor="reschedule-time">New time ({LOCAL_ZONE})</label>
          <input
            id="reschedule-time"
            type="datetime-local"
            required
            value={when}
            onChange={(changed) => setWhen(changed.target.value)}
          />
          <DialogActions confirm="Save" onCancel={() => setOpen(false)} error={error} />
        </form>
      </Dialog>
    </>
  );
}

export function EventPage({ id }: { id: string }) {
  const [notice, setNotice] = useState<string>();
  const { error: actionError, run } = useAction();
  const [updated, setUpdated] = useState<DeliveryEvent>();
  const loaded = useLoad(() => get<DeliveryEventWithHistory>(`/api/events/${encodeURIComponent(id)}`), id, 3_000);
  const event = updated && loaded.data && updated.updatedAt > loaded.data.updatedAt ? updated : loaded.data;
  // A PUT's answer has no attempts: while it is the newer record, none are shown until the reload after it.
  const attempts = loaded.data && event === loaded.data ? loaded.data.history : [];
  const callback = loaded.data?.callback;

  const cancel = () =>
    run(async () => {
      setUpdated(await put<DeliveryEvent>(`/api/events/${id}`, { status: "Cancelled" }));
      setNotice("The event is cancelled: it will not be delivered.");
      loaded.reload();
    });
  const replay = () =>
    run(async () => {
      const replayed = await post<DeliveryEvent>(`/api/events/${id}/replay`);
      navigate(`/events/${replayed.id}`);
    });

  return (
    <>
      <p>
        <Link to="/events">← Events</Link>
      </p>
      <h1>
        Event <span className="mono">{id}</span>
      </h1>
      <ErrorMessage>{loaded.error}</ErrorMessage>
      {!event && loaded.loading && <Loading what="the event" />}
      {event && (
        <>
          <div className="actions-bar">
            <StatusBadge status={event.status} />
            {event.status === "Pending" && (
              <>
                <Reschedule
                  event={event}
                  onSaved={(saved) => {
                    setUpdated(saved);
                    setNotice("The event is rescheduled.");
                    loaded.reload();
                  }}
                />
                <button type="button" className="danger" onClick={cancel}>
                  Cancel the event
                </button>
              </>
            )}
            {REPLAYABLE.has(event.status) && (
              <button type="button" className="primary" onClick={replay}>
                Replay
              </button>
            )}
          </div>
          {notice && <Notice>{notice}</Notice>}
          <ErrorMessage>{actionError}</ErrorMessage>
          <section className="card" aria-labelledby="event-details">
            <h2 id="event-details">Details</h2>
            <dl className="details">
              <div>
                <dt>Status</dt>
                <dd>{event.status}</dd>
              </div>
              <div>
                <dt>Scheduled</dt>
                <dd>
                  <Time value={event.scheduledTime} />
                </dd>
              </div>
              <div>
                <dt>Destination</dt>
                <dd className="url">{event.destination}</dd>
              </div>
              <FlowDetail flowKey={event.flowKey} />
              <div>
                <dt>Created</dt>
                <dd>
                  <Time value={event.createdAt} />
                </dd>
              </div>
              <LabelsDetail labels={event.labels} />
              <CallbackUrlDetail callbackUrl={event.callbackUrl} />
              {event.replayOf && (
                <div>
                  <dt>Replay of</dt>
                  <dd>
                    <Link to={`/events/${event.replayOf}`} className="mono">
                      {event.replayOf}
                    </Link>
                  </dd>
                </div>
              )}
            </dl>
          </section>
          <PolicyDetails policy={event} />
          <section className="card" aria-labelledby="event-payload">
            <h2 id="event-payload">Payload</h2>
            <ScrollBox label="Payload" text={prettyPayload(event.payload)} />
          </section>
          <section className="card" aria-labelledby="event-attempts">
            <h2 id="event-attempts">Delivery attempts</h2>
            <Attempts history={attempts} />
          </section>
          {callback && (
            <section className="card" aria-labelledby="event-callback">
              <h2 id="event-callback">Callback of the outcome</h2>
              <CallbackOutcome callback={callback} />
            </section>
          )}
        </>
      )}
    </>
  );
}
