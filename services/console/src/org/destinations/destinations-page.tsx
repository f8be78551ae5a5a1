import { useRef, useState } from "react";
import type { Destination } from "../../api/types.ts";
import { ConfirmDialog } from "../../components/dialog.tsx";
import { ErrorMessage, Loading, Notice } from "../../components/messages.tsx";
import { StatusBadge } from "../../components/status-badge.tsx";
import { RowActions, TableHead } from "../../components/table.tsx";
import { TableScroll } from "../../components/table-scroll.tsx";
import { Ago, Time } from "../../components/time.tsx";
import { formatCount } from "../../format.ts";
import { useLoad } from "../../use-load.ts";
import { useRowAction } from "../../use-row-action.ts";
import { listDestinations, resetDestination } from "./destination-calls.ts";

/** The organization's destination origins with their health; an Unhealthy one has a Reset button. */
export function DestinationsTable({
  destinations,
  now,
  busyOrigin,
  onReset,
}: {
  destinations: readonly Destination[];
  now: number;
  busyOrigin?: string;
  onReset: (destination: Destination) => void;
}) {
  return (
    <TableScroll label="Destinations">
      <table className="destinations-table">
        <TableHead columns={["Origin", "State", "Failures in a row", "Since", "Waiting", "Oldest waiting"]} actions />
        <tbody>
          {destinations.map((destination) => (
            <tr key={destination.origin}>
              <th scope="row" className="url mono">
                {destination.origin}
              </th>
              <td>
                <StatusBadge status={destination.state} />
              </td>
              <td>{formatCount(destination.consecutiveFailures)}</td>
              <td>
                <Time value={destination.since} />
              </td>
              <td>{formatCount(destination.waiting)}</td>
              <td>
                <Ago value={destination.oldestWaitingSince} now={now} />
              </td>
              <RowActions>
                {destination.state === "Unhealthy" && (
                  <button
                    type="button"
                    disabled={destination.origin === busyOrigin}
                    onClick={() => onReset(destination)}
                    aria-label={`Reset ${destination.origin} to Healthy`}
                  >
                    Reset
                  </button>
                )}
              </RowActions>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

/** A record the page changed (a reset), shown over the list it was made against until the next one arrives. */
interface Change {
  list: readonly Destination[] | undefined;
  destination: Destination;
}

/** The health of the organization's destination origins (contract §10.3), refreshed every 5 s. */
export function DestinationsPage() {
  const loaded = useLoad(listDestinations, "destinations", 5_000);
  const latest = useRef(loaded.data);
  latest.current = loaded.data;
  const [change, setChange] = useState<Change>();
  const [confirming, setConfirming] = useState<Destination>();
  const { busyKey: busyOrigin, notice, error, act } = useRowAction();

  const reset = (destination: Destination) => {
    setConfirming(undefined);
    return act(destination.origin, async () => {
      const now = await resetDestination(destination.origin);
      setChange({ list: latest.current, destination: now });
      loaded.reload();
      return `${destination.origin} is Healthy: its waiting deliveries go oldest first, under the usual caps.`;
    });
  };

  const destinations =
    loaded.data && change?.list === loaded.data
      ? loaded.data.map((listed) => (listed.origin === change.destination.origin ? change.destination : listed))
      : loaded.data;
  return (
    <>
      <h1>Destinations</h1>
      <p className="hint">
        When the attempts to an origin fail in a row (timeouts, refused connections, 5xx: by default 20 over at least a
        minute), it is Unhealthy: its deliveries wait, not counted as attempts, and one of them is tried every 30 s by
        default. The first success makes it Healthy again and the waiting deliveries go, oldest first.
      </p>
      <ErrorMessage>{loaded.error}</ErrorMessage>
      {notice && <Notice>{notice}</Notice>}
      <ErrorMessage>{error}</ErrorMessage>
      {!destinations && loaded.loading && <Loading what="destinations" />}
      {destinations && destinations.length === 0 && <p>No delivery attempt of this organization has an origin yet.</p>}
      {destinations && destinations.length > 0 && (
        <DestinationsTable
          destinations={destinations}
          now={Date.now()}
          busyOrigin={busyOrigin}
          onReset={setConfirming}
        />
      )}
      <ConfirmDialog
        title="Reset the destination?"
        subject={confirming}
        onClose={() => setConfirming(undefined)}
        onConfirm={reset}
        confirm="Reset to Healthy"
      >
        {(destination) => (
          <p>
            <span className="mono">{destination.origin}</span> becomes Healthy at once: its{" "}
            {formatCount(destination.waiting)} waiting {destination.waiting === 1 ? "delivery goes" : "deliveries go"}{" "}
            under the usual caps, oldest first. If its attempts keep failing, it becomes Unhealthy again.
          </p>
        )}
      </ConfirmDialog>
    </>
  );
}
