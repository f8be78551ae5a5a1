import { type FormEvent, useState } from "react";
import { ApiError, errorText, post, request, withQuery } from "../api/client.ts";
import { type DeliveryEvent, EVENT_STATUSES, type EventStatus, REPLAYABLE_FAILURES } from "../api/types.ts";
import { Dialog, DialogActions } from "../components/dialog.tsx";
import { ErrorMessage, Loading, Notice } from "../components/messages.tsx";
import { StatusBadge } from "../components/status-badge.tsx";
import { TableHead } from "../components/table.tsx";
import { TableScroll } from "../components/table-scroll.tsx";
import { Time } from "../components/time.tsx";
import { isoToLocalInput, LOCAL_ZONE, localInputToIso } from "../format.ts";
import { Link, navigate, useLocation } from "../router.tsx";
import { useAction } from "../use-action.ts";
import { useLoad } from "../use-load.ts";
import { labelFilters } from "./labels.ts";
import { NewEventForm } from "./new-event-form.tsx";
import { LabelTags } from "./outcome-details.tsx";

const PAGE_SIZE = 50;

/** Which time the window applies to, as GET /api/events names its bounds (`<field>StartDate`). */
const TIME_FIELDS = [
  { field: "scheduled", label: "Scheduled" },
  { field: "sentAt", label: "Sent" },
  { field: "failedAt", label: "Failed" },
] as const;

type TimeField = (typeof TIME_FIELDS)[number]["field"];

/** The list's order; the console shows the newest first unless the address says `order=asc`. */
type Order = "asc" | "desc";

/** The list's filter as it is in the page's address: the API's own query parameters. */
interface Filter {
  status: string;
  timeField: TimeField;
  from: string;
  to: string;
  /** `label` filters, each `key:value`; an event must carry them all. */
  labels: string[];
  flowKey: string;
  order: Order;
}

function filterFrom(query: URLSearchParams): Filter {
  const timeField = TIME_FIELDS.find(({ field }) => query.has(`${field}StartDate`) || query.has(`${field}EndDate`));
  const field = timeField?.field ?? "scheduled";
  return {
    status: query.get("status") ?? "",
    timeField: field,
    from: query.get(`${field}StartDate`) ?? "",
    to: query.get(`${field}EndDate`) ?? "",
    labels: query.getAll("label"),
    flowKey: query.get("flowKey") ?? "",
    order: query.get("order") === "asc" ? "asc" : "desc",
  };
}

/** The page's address for a filter: the order only when it is not the console's default. */
function filterAddress(filter: Filter): string {
  return withQuery("/events", { ...listQuery(filter), order: filter.order === "asc" ? "asc" : undefined });
}

/** The filter as GET /api/events and POST /api/events/replay take it (the order is the list's alone). */
function filterQuery(filter: Filter): Record<string, string> {
  const query: Record<string, string> = {};
  if (filter.status) query.status = filter.status;
  if (filter.from) query[`${filter.timeField}StartDate`] = filter.from;
  if (filter.to) query[`${filter.timeField}EndDate`] = filter.to;
  return query;
}

/**
 * The whole filter as the list's address, GET /api/events and POST /api/events/cancel take it: with
 * the flow key and the labels (a repeated `label`), which the bulk replay does not take.
 */
function listQuery(filter: Filter): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = filterQuery(filter);
  if (filter.flowKey) query.flowKey = filter.flowKey;
  if (filter.labels.length > 0) query.label = filter.labels;
  return query;
}

const NO_FILTER = { status: "", timeField: "scheduled", from: "", to: "", labels: [], flowKey: "" } as const;

function SearchById() {
  const [id, setId] = useState("");
  const [error, setError] = useState<string>();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const wanted = id.trim();
    if (!wanted) return;
    try {
      await request("GET", `/api/events/${encodeURIComponent(wanted)}`);
      navigate(`/events/${encodeURIComponent(wanted)}`);
    } catch (failure) {
      setError(
        failure instanceof ApiError && failure.status === 404
          ? `No event ${wanted} in this organization`
          : errorText(failure),
      );
    }
  };
  return (
    <search>
      <form className="inline-form" onSubmit={submit}>
        <label htmlFor="event-id-search">Find an event by id</label>
        <input
          id="event-id-search"
          value={id}
          onChange={(event) => {
            setId(event.target.value);
            setError(undefined);
          }}
          placeholder="evt_…"
          spellCheck={false}
        />
        <button type="submit">Open</button>
        <ErrorMessage>{error}</ErrorMessage>
      </form>
    </search>
  );
}

function FilterForm({ filter }: { filter: Filter }) {
  const [status, setStatus] = useState(filter.status);
  const [timeField, setTimeField] = useState<TimeField>(filter.timeField);
  const [from, setFrom] = useState(filter.from ? isoToLocalInput(filter.from) : "");
  const [to, setTo] = useState(filter.to ? isoToLocalInput(filter.to) : "");
  const [labels, setLabels] = useState(filter.labels.join(" "));
  const [flowKey, setFlowKey] = useState(filter.flowKey);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    navigate(
      filterAddress({
        status,
        timeField,
        from: localInputToIso(from),
        to: localInputToIso(to),
        labels: labelFilters(labels),
        flowKey: flowKey.trim(),
        order: filter.order,
      }),
    );
  };
  return (
    <form className="filters" onSubmit={submit} aria-label="Filter events">
      <div className="field">
        <label htmlFor="filter-status">Status</label>
        <select id="filter-status" value={status} onChange={(event) => setStatus(event.target.value)}>
          <option value="">Any status</option>
          {EVENT_STATUSES.map((name) => (
            <option key={name} value={name}>
              {name}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor="filter-time-field">Time</label>
        <select
          id="filter-time-field"
          value={timeField}
          onChange={(event) => setTimeField(event.target.value as TimeField)}
        >
          {TIME_FIELDS.map(({ field, label }) => (
            <option key={field} value={field}>
              {label}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor="filter-from">From ({LOCAL_ZONE})</label>
        <input id="filter-from" type="datetime-local" value={from} onChange={(event) => setFrom(event.target.value)} />
      </div>
      <div className="field">
        <label htmlFor="filter-to">Before ({LOCAL_ZONE})</label>
        <input id="filter-to" type="datetime-local" value={to} onChange={(event) => setTo(event.target.value)} />
      </div>
      <div className="field">
        <label htmlFor="filter-labels">Labels</label>
        <input
          id="filter-labels"
          placeholder="customer:42 tier:gold"
          spellCheck={false}
          value={labels}
          onChange={(event) => setLabels(event.target.value)}
        />
      </div>
      <div className="field">
        <label htmlFor="filter-flow">Flow key</label>
        <input
          id="filter-flow"
          spellCheck={false}
          value={flowKey}
          onChange={(event) => setFlowKey(event.target.value)}
        />
      </div>
      <div className="field actions">
        <button type="submit" className="primary">
          Apply filter
        </button>
        <button
          type="button"
          onClick={() => {
            setStatus("");
            setTimeField("scheduled");
            setFrom("");
            setTo("");
            setLabels("");
            setFlowKey("");
            navigate(filterAddress({ ...NO_FILTER, labels: [], order: filter.order }));
          }}
        >
          Clear
        </button>
      </div>
    </form>
  );
}

function BulkReplay({ filter, onDone }: { filter: Filter; onDone: () => void }) {
  const [open, setOpen] = useState(false);
  const { busy, error, run } = useAction();
  const [result, setResult] = useState<string>();
  const replay = () =>
    run(async () => {
      const answer = await post<{ replayed: number; events: string[] }>("/api/events/replay", filterQuery(filter));
      setResult(
        `Replayed ${answer.replayed} ${answer.replayed === 1 ? "event" : "events"}: each is a new Pending event due now.`,
      );
      setOpen(false);
      onDone();
    });
  return (
    <div className="bulk">
      <button type="button" onClick={() => setOpen(true)}>
        Replay every “{filter.status}” event of this filter
      </button>
      {result && <Notice>{result}</Notice>}
      <Dialog title="Replay failures" open={open} onClose={() => setOpen(false)}>
        <p>
          Every event with status <strong>{filter.status}</strong>
          {filter.from || filter.to ? " in the chosen time window" : ""} is scheduled again now (up to 1000, oldest
          first), as a new event. Each counts against the monthly limit.
        </p>
        <DialogActions
          confirm="Replay them"
          busyConfirm="Replaying…"
          onConfirm={replay}
          busy={busy}
          onCancel={() => setOpen(false)}
          error={error}
        />
      </Dialog>
    </div>
  );
}

/** The most Pending events the count before a bulk cancel lists; past it the dialog says "at least". */
const COUNT_LIMIT = 1000;

/** How many Pending events match the filter: exact up to COUNT_LIMIT, else a lower bound. */
async function countPending(filter: Filter): Promise<{ count: number; more: boolean }> {
  const answer = await request<DeliveryEvent[]>(
    "GET",
    withQuery("/api/events", { ...listQuery(filter), status: "Pending", limit: COUNT_LIMIT }),
  );
  return { count: answer.body.length, more: answer.headers.has("x-next-cursor") };
}

const eventsWord = (n: number) => (n === 1 ? "event" : "events");

/** Cancels the Pending events of the filter (POST /api/events/cancel), once their count is confirmed. */
function BulkCancel({ filter, onDone }: { filter: Filter; onDone: () => void }) {
  const [open, setOpen] = useState(false);
  const [matching, setMatching] = useState<{ count: number; more: boolean }>();
  const { busy, error, setError, run } = useAction();
  const [result, setResult] = useState<string>();
  const start = async () => {
    setOpen(true);
    setMatching(undefined);
    setError(undefined);
    setResult(undefined);
    try {
      setMatching(await countPending(filter));
    } catch (failure) {
      setError(errorText(failure));
    }
  };
  const cancel = () =>
    run(async () => {
      // `status: "Pending"` is a filter of its own: with nothing else chosen, every pending event.
      const answer = await post<{ cancelled: number }>("/api/events/cancel", {
        ...listQuery(filter),
        status: "Pending",
      });
      setResult(`Cancelled ${answer.cancelled} ${eventsWord(answer.cancelled)}.`);
      setOpen(false);
      onDone();
    });
  const counted = matching
    ? `${matching.more ? "At least " : ""}${matching.count} Pending ${eventsWord(matching.count)} match this filter.`
    : undefined;
  return (
    <div className="bulk">
      <button type="button" onClick={start}>
        Cancel the Pending events of this filter
      </button>
      {result && <Notice>{result}</Notice>}
      <Dialog title="Cancel pending events" open={open} onClose={() => setOpen(false)}>
        {!matching && !error && <Loading what="the matching events" />}
        {counted && <p>{counted}</p>}
        {matching && matching.count > 0 && (
          <p>
            Each becomes Cancelled and is not delivered (up to 10000 at a time); one being delivered now is not
            cancelled.
          </p>
        )}
        <DialogActions
          confirm="Cancel them"
          busyConfirm="Cancelling…"
          tone="danger"
          onConfirm={cancel}
          busy={busy}
          disabled={!matching || matching.count === 0}
          cancel="Keep them"
          onCancel={() => setOpen(false)}
          error={error}
        />
      </Dialog>
    </div>
  );
}

/**
 * A page of events, one row each: its id (with its labels as chips under it), status, time and
 * destination; on a phone each row is a card (styles.css, "Phones").
 */
export function EventsTable({ events }: { events: readonly DeliveryEvent[] }) {
  return (
    <TableScroll label="Events">
      <table className="events-table" aria-describedby="events-count">
        <TableHead columns={["Event", "Status", "Scheduled", "Destination"]} />
        <tbody>
          {events.map((event) => (
            <tr key={event.id}>
              <td>
                <Link to={`/events/${event.id}`} className="mono">
                  {event.id}
                </Link>
                {event.replayOf && <span className="tag">replay</span>}
                <LabelTags labels={event.labels} />
              </td>
              <td>
                <StatusBadge status={event.status} />
              </td>
              <td className="when">
                <Time value={event.scheduledTime} />
              </td>
              <td className="url">{event.destination}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

export function EventsPage() {
  const { query } = useLocation();
  const filter = filterFrom(query);
  const filterKey = JSON.stringify(filter);
  // Cursors of the pages before this one, for "Previous"; the first page has none.
  const [cursors, setCursors] = useState<string[]>([]);
  const [cursorFilter, setCursorFilter] = useState(filterKey);
  if (cursorFilter !== filterKey) {
    setCursorFilter(filterKey);
    setCursors([]);
  }
  const cursor = cursors.at(-1);
  const page = useLoad(
    async () => {
      const answer = await request<DeliveryEvent[]>(
        "GET",
        withQuery("/api/events", { ...listQuery(filter), order: filter.order, limit: PAGE_SIZE, cursor }),
      );
      return { events: answer.body, next: answer.headers.get("x-next-cursor") ?? undefined };
    },
    `${filterKey}|${cursor ?? ""}`,
    // The first page follows progress (Pending → Sent) on its own.
    cursor === undefined ? 5_000 : undefined,
  );
  // The bulk replay takes no flow key or labels: offered only when the filter has none.
  const replayable =
    REPLAYABLE_FAILURES.includes(filter.status as EventStatus) && !filter.flowKey && filter.labels.length === 0;
  const [creating, setCreating] = useState(false);
  return (
    <>
      <h1>Events</h1>
      <div className="actions-bar">
        <button type="button" className="primary" onClick={() => setCreating(true)}>
          New event
        </button>
      </div>
      <Dialog title="New event" open={creating} onClose={() => setCreating(false)} wide>
        {creating && (
          <NewEventForm
            onCancel={() => setCreating(false)}
            onSaved={(created) => {
              setCreating(false);
              navigate(`/events/${encodeURIComponent(created.id)}`);
            }}
          />
        )}
      </Dialog>
      <SearchById />
      <FilterForm key={filterKey} filter={filter} />
      <div className="field sort-control">
        <label htmlFor="events-order">Sort</label>
        <select
          id="events-order"
          value={filter.order}
          onChange={(changed) => navigate(filterAddress({ ...filter, order: changed.target.value as Order }))}
        >
          <option value="desc">Newest scheduled first</option>
          <option value="asc">Oldest scheduled first</option>
        </select>
      </div>
      {replayable && <BulkReplay filter={filter} onDone={page.reload} />}
      {(filter.status === "" || filter.status === "Pending") && <BulkCancel filter={filter} onDone={page.reload} />}
      <ErrorMessage>{page.error}</ErrorMessage>
      {!page.data && page.loading && <Loading what="events" />}
      {page.data && (
        <>
          <EventsTable events={page.data.events} />
          <p id="events-count" className="hint">
            {page.data.events.length === 0
              ? "No events match."
              : `Page ${cursors.length + 1}: ${page.data.events.length} ${page.data.events.length === 1 ? "event" : "events"}, ${filter.order === "asc" ? "oldest" : "newest"} scheduled first.`}
          </p>
          <nav className="pager" aria-label="Pages of events">
            <button type="button" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>
              ← Previous page
            </button>
            <button
              type="button"
              disabled={!page.data.next}
              onClick={() => page.data?.next && setCursors([...cursors, page.data.next])}
            >
              Next page →
            </button>
          </nav>
        </>
      )}
    </>
  );
}
