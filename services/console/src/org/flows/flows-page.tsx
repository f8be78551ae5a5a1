import { useRef, useState } from "react";
import type { Flow, FlowWithCounts } from "../../api/types.ts";
import { ConfirmDialog, Dialog } from "../../components/dialog.tsx";
import { ErrorMessage, Loading, Notice } from "../../components/messages.tsx";
import { StatusBadge } from "../../components/status-badge.tsx";
import { RowActions, TableHead } from "../../components/table.tsx";
import { TableScroll } from "../../components/table-scroll.tsx";
import { Ago } from "../../components/time.tsx";
import { formatCount } from "../../format.ts";
import { useLocation } from "../../router.tsx";
import { useLoad } from "../../use-load.ts";
import { useRowAction } from "../../use-row-action.ts";
import { describeLimits, flowState } from "./describe-flow.ts";
import { deleteFlow, listFlows, pauseOrResume } from "./flow-calls.ts";
import { FlowEditor } from "./flow-editor.tsx";
import { flowFormOf, NEW_FLOW_FORM } from "./flow-form.ts";

/** What a row's buttons ask of the page. */
export interface FlowRowActions {
  onPauseOrResume: (flow: FlowWithCounts) => void;
  onEdit: (flow: FlowWithCounts) => void;
  onDelete: (flow: FlowWithCounts) => void;
}

/** One flow: its limits in words, its state, what waits behind it, and its buttons. */
export function FlowRow({
  flow,
  now,
  picked,
  busy,
  actions,
}: {
  flow: FlowWithCounts;
  now: number;
  picked: boolean;
  busy: boolean;
  actions: FlowRowActions;
}) {
  return (
    <tr className={picked ? "picked" : undefined} aria-current={picked ? "true" : undefined}>
      <th scope="row" className="mono flow-key">
        {flow.flowKey}
      </th>
      <td>
        <StatusBadge status={flowState(flow)} />
      </td>
      <td className="limits">{describeLimits(flow)}</td>
      <td>{formatCount(flow.waiting)}</td>
      <td>{formatCount(flow.inFlight)}</td>
      <td>
        <Ago value={flow.oldestWaitingSince} now={now} />
      </td>
      <RowActions>
        <button
          type="button"
          className={flow.paused ? "primary" : undefined}
          disabled={busy}
          onClick={() => actions.onPauseOrResume(flow)}
          aria-label={`${flow.paused ? "Resume" : "Pause"} flow ${flow.flowKey}`}
        >
          {flow.paused ? "Resume" : "Pause"}
        </button>
        <button
          type="button"
          disabled={busy}
          onClick={() => actions.onEdit(flow)}
          aria-label={`Edit the limits of flow ${flow.flowKey}`}
        >
          Edit
        </button>
        <button
          type="button"
          className="danger"
          disabled={busy}
          onClick={() => actions.onDelete(flow)}
          aria-label={`Delete flow ${flow.flowKey}`}
        >
          Delete
        </button>
      </RowActions>
    </tr>
  );
}

/** The organization's flows; `picked` is the flow the page was opened for (highlighted). */
export function FlowsTable({
  flows,
  now,
  picked,
  busyKey,
  actions,
}: {
  flows: readonly FlowWithCounts[];
  now: number;
  picked?: string;
  busyKey?: string;
  actions: FlowRowActions;
}) {
  return (
    <TableScroll label="Flows">
      <table className="flows-table">
        <TableHead columns={["Flow", "State", "Limits", "Waiting", "In flight", "Oldest waiting"]} actions />
        <tbody>
          {flows.map((flow) => (
            <FlowRow
              key={flow.flowKey}
              flow={flow}
              now={now}
              picked={flow.flowKey === picked}
              busy={flow.flowKey === busyKey}
              actions={actions}
            />
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

/**
 * Records the page changed since the list was loaded (a pause, a save: the flow as answered; a delete:
 * null), shown over that list until the next one arrives.
 */
export interface Changes {
  list: readonly FlowWithCounts[] | undefined;
  flows: Record<string, Flow | null>;
}

/**
 * The list with the page's changes. An action answers the flow without its counts: a listed flow
 * keeps the listed ones, a flow new to the list shows none waiting until the list is loaded again.
 */
export function withChanges(list: readonly FlowWithCounts[], changes: Changes): FlowWithCounts[] {
  if (changes.list !== list) return [...list];
  const shown: FlowWithCounts[] = [];
  for (const listed of list) {
    const changed = changes.flows[listed.flowKey];
    if (changed === undefined) shown.push(listed);
    else if (changed !== null) shown.push({ ...listed, ...changed });
  }
  for (const changed of Object.values(changes.flows)) {
    if (changed && !list.some((listed) => listed.flowKey === changed.flowKey)) {
      shown.push({ ...changed, waiting: 0, inFlight: 0, oldestWaitingSince: null });
    }
  }
  return shown;
}

/** The organization's flows (contract §10.2): their limits, pause and backlog, refreshed every 5 s. */
export function FlowsPage() {
  const { query } = useLocation();
  const picked = query.get("flow") ?? undefined;
  const loaded = useLoad(listFlows, "flows", 5_000);
  const latest = useRef(loaded.data);
  latest.current = loaded.data;
  const [changes, setChanges] = useState<Changes>({ list: undefined, flows: {} });
  const { busyKey, notice, setNotice, error, setError, act } = useRowAction();
  const [editing, setEditing] = useState<FlowWithCounts>();
  const [deleting, setDeleting] = useState<FlowWithCounts>();
  // The create form starts over after a save, and with the picked flow's key when it has no limits yet.
  const [formVersion, setFormVersion] = useState(0);

  /** Shows a flow as it is now (null: deleted) until the list is loaded again, which starts at once. */
  const changed = (flowKey: string, flow: Flow | null) => {
    const list = latest.current;
    setChanges((before) => ({
      list,
      flows: { ...(before.list === list ? before.flows : {}), [flowKey]: flow },
    }));
    loaded.reload();
  };

  const togglePause = (flow: Pick<Flow, "flowKey" | "paused">) =>
    act(flow.flowKey, async () => {
      const now = await pauseOrResume(flow);
      changed(flow.flowKey, now);
      return now.paused
        ? `Flow ${flow.flowKey} is paused: its deliveries wait until it is resumed.`
        : `Flow ${flow.flowKey} is resumed: its waiting deliveries go oldest first, under its limits.`;
    });
  const remove = (flow: Flow) =>
    act(flow.flowKey, async () => {
      setDeleting(undefined);
      await deleteFlow(flow.flowKey);
      changed(flow.flowKey, null);
      return `Flow ${flow.flowKey} is deleted: its deliveries go without limits.`;
    });
  const saved = (flow: Flow) => {
    changed(flow.flowKey, flow);
    setError(undefined);
    setNotice(`The limits of flow ${flow.flowKey} are saved: ${describeLimits(flow)}.`);
  };

  const flows = loaded.data ? withChanges(loaded.data, changes) : undefined;
  const pickedUnlimited = picked !== undefined && flows !== undefined && !flows.some((f) => f.flowKey === picked);
  return (
    <>
      <h1>Flows</h1>
      <p className="hint">
        Events and cron jobs that give the same <code>flowKey</code> share their flow's limits, across every worker: at
        most a rate of attempts per period, and at most a number in flight at once. A delivery held back waits, it does
        not fail; a paused flow's deliveries wait until it is resumed.
      </p>
      <ErrorMessage>{loaded.error}</ErrorMessage>
      {notice && <Notice>{notice}</Notice>}
      <ErrorMessage>{error}</ErrorMessage>
      {!flows && loaded.loading && <Loading what="flows" />}
      {flows && flows.length === 0 && (
        <p>
          This organization has no flow with limits or a pause yet: the <code>flowKey</code> of events and cron jobs
          names one, and it goes without limits until it is given some below.
        </p>
      )}
      {flows && flows.length > 0 && (
        <FlowsTable
          flows={flows}
          now={Date.now()}
          picked={picked}
          busyKey={busyKey}
          actions={{ onPauseOrResume: togglePause, onEdit: setEditing, onDelete: setDeleting }}
        />
      )}
      <section className="card" aria-labelledby="new-flow-title">
        <h2 id="new-flow-title">Set a flow's limits</h2>
        {pickedUnlimited && (
          <div className="actions-bar">
            <p>
              Flow <span className="mono">{picked}</span> has no limits: its deliveries go as soon as they are due.
            </p>
            <button
              type="button"
              disabled={busyKey === picked}
              onClick={() => togglePause({ flowKey: picked, paused: false })}
            >
              Pause flow {picked}
            </button>
          </div>
        )}
        <FlowEditor
          key={`${formVersion}|${pickedUnlimited ? picked : ""}`}
          initial={pickedUnlimited ? { ...NEW_FLOW_FORM, flowKey: picked } : NEW_FLOW_FORM}
          knownKeys={flows?.map((flow) => flow.flowKey)}
          submitLabel="Save the limits"
          onSaved={(flow) => {
            saved(flow);
            setFormVersion((n) => n + 1);
          }}
        />
      </section>
      <Dialog
        title={`Limits of flow ${editing?.flowKey ?? ""}`}
        open={editing !== undefined}
        onClose={() => setEditing(undefined)}
      >
        {editing && (
          <FlowEditor
            initial={flowFormOf(editing)}
            fixedKey
            submitLabel="Save the limits"
            onCancel={() => setEditing(undefined)}
            onSaved={(flow) => {
              setEditing(undefined);
              saved(flow);
            }}
          />
        )}
      </Dialog>
      <ConfirmDialog
        title="Delete the flow?"
        subject={deleting}
        onClose={() => setDeleting(undefined)}
        onConfirm={remove}
        confirm="Delete the flow"
        tone="danger"
      >
        {(flow) => (
          <p>
            The limits of flow <span className="mono">{flow.flowKey}</span>
            {flow.paused ? " and its pause" : ""} are removed: its deliveries go without limits, as soon as they are
            due. Events and cron jobs keep their <code>flowKey</code>.
          </p>
        )}
      </ConfirmDialog>
    </>
  );
}
