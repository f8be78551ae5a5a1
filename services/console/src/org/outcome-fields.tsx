import { useId } from "react";

/** Labels (as typed, one `key:value` a line) and the callback URL of an event or a cron job. */
export interface OutcomeFieldsForm {
  labels: string;
  callbackUrl: string;
}

export const EMPTY_OUTCOME_FIELDS: OutcomeFieldsForm = { labels: "", callbackUrl: "" };

export function OutcomeFields({
  form,
  onChange,
  callbackHelp,
}: {
  form: OutcomeFieldsForm;
  onChange: (change: Partial<OutcomeFieldsForm>) => void;
  callbackHelp: string;
}) {
  const id = useId();
  return (
    <div className="field-row">
      <div>
        <label htmlFor={`${id}-labels`}>Labels</label>
        <textarea
          id={`${id}-labels`}
          rows={2}
          spellCheck={false}
          placeholder="customer:42"
          value={form.labels}
          onChange={(event) => onChange({ labels: event.target.value })}
          aria-describedby={`${id}-labels-help`}
        />
        <p id={`${id}-labels-help`} className="hint">
          One key:value a line, at most 10; the events list filters by them
        </p>
      </div>
      <div>
        <label htmlFor={`${id}-callback`}>Callback URL</label>
        <input
          id={`${id}-callback`}
          type="url"
          placeholder="None"
          value={form.callbackUrl}
          onChange={(event) => onChange({ callbackUrl: event.target.value })}
          aria-describedby={`${id}-callback-help`}
        />
        <p id={`${id}-callback-help`} className="hint">
          {callbackHelp}
        </p>
      </div>
    </div>
  );
}
