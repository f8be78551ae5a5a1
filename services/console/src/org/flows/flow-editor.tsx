import { type FormEvent, useId, useState } from "react";
import type { Flow } from "../../api/types.ts";
import { FormActions } from "../../components/form-actions.tsx";
import { useAction } from "../../use-action.ts";
import { describeLimits } from "./describe-flow.ts";
import { saveFlowLimits } from "./flow-calls.ts";
import { type FlowForm, FORM_UNITS, flowRequestOfForm } from "./flow-form.ts";

/** The limits the form says as they would read in the table, or nothing while the form cannot be read. */
function limitsOfForm(form: FlowForm): string | undefined {
  const outcome = flowRequestOfForm({ ...form, flowKey: form.flowKey.trim() || "x" });
  if ("problem" in outcome) return undefined;
  const { rate = null, periodMs = 1_000, parallelism = null } = outcome.body;
  return describeLimits({ rate, periodMs, parallelism });
}

/**
 * A flow's limits (PUT /api/flows/{flowKey}): a new flow's, or an existing one's (`fixedKey`: its key
 * is not edited). An empty limit is no limit. A typed key among `knownKeys` is said to replace that
 * flow's limits (a PUT replaces them as a whole).
 */
export function FlowEditor({
  initial,
  fixedKey = false,
  knownKeys = [],
  submitLabel,
  onSaved,
  onCancel,
}: {
  initial: FlowForm;
  fixedKey?: boolean;
  knownKeys?: readonly string[];
  submitLabel: string;
  onSaved: (flow: Flow) => void;
  onCancel?: () => void;
}) {
  const id = useId();
  const [form, setForm] = useState(initial);
  const { busy, error, setError, run } = useAction();
  const set = (change: Partial<FlowForm>) => {
    setForm({ ...form, ...change });
    setError(undefined);
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const outcome = flowRequestOfForm(form);
    if ("problem" in outcome) return setError(outcome.problem);
    return run(async () => onSaved(await saveFlowLimits(outcome.flowKey, outcome.body)));
  };
  const limits = limitsOfForm(form);
  const replaces = !fixedKey && knownKeys.includes(form.flowKey.trim());
  return (
    <form onSubmit={submit} className="edit-form flow-form">
      {!fixedKey && (
        <>
          <label htmlFor={`${id}-key`}>Flow key</label>
          <input
            id={`${id}-key`}
            className="mono"
            required
            maxLength={64}
            value={form.flowKey}
            onChange={(event) => set({ flowKey: event.target.value })}
            aria-describedby={`${id}-key-help`}
            spellCheck={false}
            autoComplete="off"
          />
          <p id={`${id}-key-help`} className="hint">
            The <code>flowKey</code> that events and cron jobs give: 1 to 64 characters of A-Z, a-z, 0-9 and . _ : -
          </p>
        </>
      )}
      <div className="field-row">
        <div>
          <label htmlFor={`${id}-rate`}>Rate (attempts per period)</label>
          <input
            id={`${id}-rate`}
            inputMode="numeric"
            placeholder="No limit"
            value={form.rate}
            onChange={(event) => set({ rate: event.target.value })}
          />
        </div>
        <div>
          <label htmlFor={`${id}-period`}>Period</label>
          <div className="period-input">
            <input
              id={`${id}-period`}
              inputMode="numeric"
              value={form.period}
              onChange={(event) => set({ period: event.target.value })}
              aria-describedby={`${id}-period-help`}
            />
            <select
              aria-label="Unit of the period"
              value={form.unitMs}
              onChange={(event) => set({ unitMs: Number(event.target.value) })}
            >
              {FORM_UNITS.map(({ ms, label }) => (
                <option key={ms} value={ms}>
                  {label}
                </option>
              ))}
            </select>
          </div>
          <p id={`${id}-period-help`} className="hint">
            1 second to 1 day
          </p>
        </div>
        <div>
          <label htmlFor={`${id}-parallelism`}>Parallelism (at most in flight)</label>
          <input
            id={`${id}-parallelism`}
            inputMode="numeric"
            placeholder="No limit"
            value={form.parallelism}
            onChange={(event) => set({ parallelism: event.target.value })}
          />
        </div>
      </div>
      <p className="hint" aria-live="polite">
        {limits ? `Limits: ${limits}.` : ""}
        {replaces ? ` Flow ${form.flowKey.trim()} has limits already: saving replaces them.` : ""}
      </p>
      <FormActions submit={submitLabel} busySubmit="Saving…" busy={busy} error={error} onCancel={onCancel} />
    </form>
  );
}
