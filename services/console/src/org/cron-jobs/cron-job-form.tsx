import { type FormEvent, useId, useState } from "react";
import { CATCH_UP_POLICIES, type CronJob, type CronJobWithHistory, OVERLAP_POLICIES } from "../../api/types.ts";
import { FormActions } from "../../components/form-actions.tsx";
import { formatTime, LOCAL_ZONE } from "../../format.ts";
import { useAction } from "../../use-action.ts";
import { DestinationField } from "../destination-field.tsx";
import { OutcomeFields } from "../outcome-fields.tsx";
import { DeliveryExtras, deliveryExtrasOf, EMPTY_DELIVERY_EXTRAS } from "../policy/delivery-extras.tsx";
import { createCronJob, editCronJob } from "./cron-calls.ts";
import {
  type CronForm,
  createRequestOfForm,
  EVERY_PRESETS,
  editRequestOfForm,
  type FiringMode,
  firingTimesKept,
  SPAN_UNITS,
  type SpanField,
} from "./cron-form.ts";
import { CronPreview } from "./cron-preview.tsx";
import { CATCH_UP_MEANINGS, OVERLAP_MEANINGS } from "./describe-schedule.ts";

/** A count and its unit side by side (a catch-up window, a jitter). */
function SpanInput({
  id,
  value,
  onChange,
  unitLabel,
  placeholder,
  describedBy,
}: {
  id: string;
  value: SpanField;
  onChange: (value: SpanField) => void;
  unitLabel: string;
  placeholder?: string;
  describedBy?: string;
}) {
  return (
    <div className="period-input">
      <input
        id={id}
        inputMode="numeric"
        placeholder={placeholder}
        value={value.count}
        onChange={(event) => onChange({ ...value, count: event.target.value })}
        aria-describedby={describedBy}
      />
      <select
        aria-label={unitLabel}
        value={value.unitMs}
        onChange={(event) => onChange({ ...value, unitMs: Number(event.target.value) })}
      >
        {SPAN_UNITS.map(({ ms, label }) => (
          <option key={ms} value={ms}>
            {label}
          </option>
        ))}
      </select>
    </div>
  );
}

const FIRING_MODES: readonly { mode: FiringMode; label: string }[] = [
  { mode: "expression", label: "By an expression" },
  { mode: "every", label: "At an interval" },
];

/**
 * A cron job's form: a new job's (POST), or an existing one's (`job`: PUT of what changed). Beside it
 * the preview of its next firings; the API's sentence when it refuses the save.
 */
export function CronJobForm({
  initial,
  job,
  submitLabel,
  onSaved,
  onCancel,
}: {
  initial: CronForm;
  job?: CronJob;
  submitLabel: string;
  onSaved: (job: CronJobWithHistory) => void;
  onCancel?: () => void;
}) {
  const id = useId();
  const [form, setForm] = useState(initial);
  // A new job may set its own policy and flow; an existing one's are edited by the API, not here.
  const [extras, setExtras] = useState(EMPTY_DELIVERY_EXTRAS);
  const { busy, error, setError, run } = useAction();
  const set = (change: Partial<CronForm>) => {
    setForm({ ...form, ...change });
    setError(undefined);
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    let save: () => Promise<CronJobWithHistory>;
    if (job) {
      const edit = editRequestOfForm(form, job);
      if ("problem" in edit) return setError(edit.problem);
      save = () => editCronJob(job.id, edit.body);
    } else {
      const create = createRequestOfForm(form);
      if ("problem" in create) return setError(create.problem);
      const more = deliveryExtrasOf(extras);
      if ("problem" in more) return setError(more.problem);
      save = () => createCronJob({ ...create.body, ...more.fields });
    }
    return run(async () => onSaved(await save()));
  };
  const preset = EVERY_PRESETS.some((p) => p.every === form.every.trim()) ? form.every.trim() : "";
  const kept = job !== undefined && firingTimesKept(form, job);
  return (
    <form onSubmit={submit} className="edit-form cron-form">
      <div className="form-columns">
        <div>
          <DestinationField
            id={`${id}-destination`}
            value={form.destination}
            onChange={(destination) => set({ destination })}
          />
          <label htmlFor={`${id}-payload`}>Payload</label>
          <textarea
            id={`${id}-payload`}
            rows={3}
            value={form.payload}
            onChange={(event) => set({ payload: event.target.value })}
          />
          <fieldset className="segmented">
            <legend>Fires</legend>
            {FIRING_MODES.map(({ mode, label }) => (
              <label key={mode}>
                <input
                  type="radio"
                  name={`${id}-mode`}
                  value={mode}
                  checked={form.mode === mode}
                  onChange={() => set({ mode })}
                />
                {label}
              </label>
            ))}
          </fieldset>
          {form.mode === "expression" ? (
            <>
              <label htmlFor={`${id}-expression`}>Cron expression</label>
              <input
                id={`${id}-expression`}
                className="mono"
                required
                placeholder="*/5 * * * *"
                value={form.expression}
                onChange={(event) => set({ expression: event.target.value })}
                aria-describedby={`${id}-expression-help`}
                spellCheck={false}
                autoComplete="off"
              />
              <p id={`${id}-expression-help`} className="hint">
                minute hour day-of-month month day-of-week, or six fields with seconds first
              </p>
            </>
          ) : (
            <div className="field-row">
              <div>
                <label htmlFor={`${id}-preset`}>Interval</label>
                <select id={`${id}-preset`} value={preset} onChange={(event) => set({ every: event.target.value })}>
                  {EVERY_PRESETS.map(({ every, label }) => (
                    <option key={every} value={every}>
                      {label}
                    </option>
                  ))}
                  <option value="">another (type it)</option>
                </select>
              </div>
              <div>
                <label htmlFor={`${id}-every`}>ISO 8601 duration</label>
                <input
                  id={`${id}-every`}
                  className="mono"
                  required
                  placeholder="PT30S"
                  value={form.every}
                  onChange={(event) => set({ every: event.target.value })}
                  aria-describedby={`${id}-every-help`}
                  spellCheck={false}
                  autoComplete="off"
                />
                <p id={`${id}-every-help`} className="hint">
                  At least 1 second: PT30S, PT5M, PT1H30M, P1D
                </p>
              </div>
            </div>
          )}
          <label htmlFor={`${id}-timezone`}>Time zone</label>
          <input
            id={`${id}-timezone`}
            placeholder="UTC"
            list={`${id}-zones`}
            value={form.timezone}
            onChange={(event) => set({ timezone: event.target.value })}
            aria-describedby={`${id}-timezone-help`}
            spellCheck={false}
            autoComplete="off"
          />
          <datalist id={`${id}-zones`}>
            <option value="UTC" />
            {LOCAL_ZONE !== "UTC" && <option value={LOCAL_ZONE} />}
          </datalist>
          <p id={`${id}-timezone-help`} className="hint">
            An IANA name (Europe/Paris); UTC when empty.{" "}
            {form.mode === "expression" ? "The expression is read in it." : "The preview shows its times in it."}
          </p>
          <div className="field-row">
            <div>
              <label htmlFor={`${id}-start`}>Start</label>
              <input
                id={`${id}-start`}
                type="datetime-local"
                value={form.startAt}
                onChange={(event) => set({ startAt: event.target.value })}
                aria-describedby={`${id}-window-help`}
              />
            </div>
            <div>
              <label htmlFor={`${id}-end`}>End</label>
              <input
                id={`${id}-end`}
                type="datetime-local"
                value={form.endAt}
                onChange={(event) => set({ endAt: event.target.value })}
                aria-describedby={`${id}-window-help`}
              />
            </div>
          </div>
          <p id={`${id}-window-help`} className="hint">
            Runs happen only between them; either may be empty. In your time zone ({LOCAL_ZONE}).
          </p>
          <div className="field-row">
            <div>
              <label htmlFor={`${id}-max-runs`}>Run limit</label>
              <input
                id={`${id}-max-runs`}
                inputMode="numeric"
                placeholder="No limit"
                value={form.maxRuns}
                onChange={(event) => set({ maxRuns: event.target.value })}
                aria-describedby={`${id}-max-runs-help`}
              />
              <p id={`${id}-max-runs-help`} className="hint">
                After its last run the job is Completed
              </p>
            </div>
            <div>
              <label htmlFor={`${id}-jitter`}>Jitter</label>
              <SpanInput
                id={`${id}-jitter`}
                value={form.jitter}
                onChange={(jitter) => set({ jitter })}
                unitLabel="Unit of the jitter"
                placeholder="None"
                describedBy={`${id}-jitter-help`}
              />
              <p id={`${id}-jitter-help`} className="hint">
                Each run is sent up to this long after its time (at most 1 hour)
              </p>
            </div>
          </div>
          <div className="field-row">
            <div>
              <label htmlFor={`${id}-catch-up`}>Missed firings</label>
              <select
                id={`${id}-catch-up`}
                value={form.catchUp}
                onChange={(event) => set({ catchUp: event.target.value as CronForm["catchUp"] })}
                aria-describedby={`${id}-catch-up-help`}
              >
                {CATCH_UP_POLICIES.map((policy) => (
                  <option key={policy} value={policy}>
                    {policy}
                  </option>
                ))}
              </select>
              <p id={`${id}-catch-up-help`} className="hint">
                {CATCH_UP_MEANINGS[form.catchUp]}
              </p>
            </div>
            {form.catchUp === "all" && (
              <div>
                <label htmlFor={`${id}-catch-up-window`}>Catch-up window</label>
                <SpanInput
                  id={`${id}-catch-up-window`}
                  value={form.catchUpWindow}
                  onChange={(catchUpWindow) => set({ catchUpWindow })}
                  unitLabel="Unit of the catch-up window"
                  placeholder="Default"
                  describedBy={`${id}-catch-up-window-help`}
                />
                <p id={`${id}-catch-up-window-help`} className="hint">
                  How far back missed firings are delivered: 1 hour when empty
                </p>
              </div>
            )}
          </div>
          <label htmlFor={`${id}-overlap`}>Overlap</label>
          <select
            id={`${id}-overlap`}
            value={form.overlap}
            onChange={(event) => set({ overlap: event.target.value as CronForm["overlap"] })}
            aria-describedby={`${id}-overlap-help`}
          >
            {OVERLAP_POLICIES.map((policy) => (
              <option key={policy} value={policy}>
                {policy}
              </option>
            ))}
          </select>
          <p id={`${id}-overlap-help`} className="hint">
            {OVERLAP_MEANINGS[form.overlap]}
          </p>
        </div>
        <CronPreview
          form={form}
          editing={job !== undefined}
          firingTimesKept={kept}
          note={
            kept && job?.nextExecutionDate
              ? `The firing times are unchanged: saved, the job keeps its next run, ${formatTime(job.nextExecutionDate)}.`
              : undefined
          }
        />
      </div>
      <OutcomeFields
        form={form}
        onChange={set}
        callbackHelp="Told each run's final outcome (sent or failed) by a signed POST"
      />
      {!job && <DeliveryExtras form={extras} onChange={setExtras} />}
      <FormActions submit={submitLabel} busySubmit="Saving…" busy={busy} error={error} onCancel={onCancel} />
    </form>
  );
}
