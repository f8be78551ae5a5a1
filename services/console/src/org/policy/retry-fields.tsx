import { useId } from "react";
import type { PolicyForm, RetryForm } from "./policy-form.ts";

const SCHEDULES: [RetryForm, string][] = [
  ["default", "Deployment's default"],
  ["fixed", "Fixed delays"],
  ["exponential", "Exponential"],
];

/** The retry schedule of the default policy's form, and its deadline and final statuses. */
export function RetryFields({ form, onChange }: { form: PolicyForm; onChange: (form: PolicyForm) => void }) {
  const id = useId();
  const set = (change: Partial<PolicyForm>) => onChange({ ...form, ...change });
  const field = (name: keyof PolicyForm & string, label: string, placeholder: string) => (
    <div>
      <label htmlFor={`${id}-${name}`}>{label}</label>
      <input
        id={`${id}-${name}`}
        inputMode="numeric"
        placeholder={placeholder}
        value={form[name] as string}
        onChange={(event) => set({ [name]: event.target.value })}
      />
    </div>
  );
  return (
    <fieldset>
      <legend>Retries</legend>
      <div className="segmented">
        {SCHEDULES.map(([value, label]) => (
          <label key={value}>
            <input
              type="radio"
              name={`${id}-schedule`}
              value={value}
              checked={form.retry === value}
              onChange={() => set({ retry: value })}
            />
            {label}
          </label>
        ))}
      </div>
      {form.retry === "fixed" && (
        <div className="field-row">{field("delaysMs", "Delays before each retry (ms)", "3000, 5000, 10000")}</div>
      )}
      {form.retry === "exponential" && (
        <div className="field-row">
          {field("attempts", "Number of retries", "5")}
          {field("initialDelayMs", "First delay (ms)", "1000")}
          {field("maxDelayMs", "Longest delay (ms)", "60000")}
          <div>
            <label className="checkbox">
              <input
                type="checkbox"
                checked={form.jitter}
                onChange={(event) => set({ jitter: event.target.checked })}
              />
              With jitter
            </label>
          </div>
        </div>
      )}
      {form.retry !== "default" && (
        <div className="field-row">
          {field("maxAgeMs", "Deadline after the scheduled time (ms)", "none")}
          {field("stopOnStatus", "Stop at once on status", "404, 410")}
        </div>
      )}
    </fieldset>
  );
}
