import { useId } from "react";
import { DELIVERY_METHODS } from "../../api/types.ts";
import { BODY_MODE_WORDS } from "./describe-policy.ts";
import { HeaderRowsEditor } from "./header-rows-editor.tsx";
import type { SendingForm } from "./policy-form.ts";

/**
 * Method, body mode, timeout and headers of a delivery; each left empty takes `fallback` (whose
 * default that is, in words: "the organization's default").
 */
export function SendingFields({
  form,
  onChange,
  fallback,
}: {
  form: SendingForm;
  onChange: (form: SendingForm) => void;
  fallback: string;
}) {
  const id = useId();
  const set = (change: Partial<SendingForm>) => onChange({ ...form, ...change });
  return (
    <>
      <div className="field-row">
        <div>
          <label htmlFor={`${id}-method`}>Method</label>
          <select
            id={`${id}-method`}
            value={form.method}
            onChange={(event) => set({ method: event.target.value as SendingForm["method"] })}
          >
            <option value="">{fallback}</option>
            {DELIVERY_METHODS.map((method) => (
              <option key={method} value={method}>
                {method}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor={`${id}-body`}>Body</label>
          <select
            id={`${id}-body`}
            value={form.body}
            onChange={(event) => set({ body: event.target.value as SendingForm["body"] })}
          >
            <option value="">{fallback}</option>
            <option value="envelope">{BODY_MODE_WORDS.envelope}</option>
            <option value="raw">{BODY_MODE_WORDS.raw}</option>
          </select>
        </div>
        <div>
          <label htmlFor={`${id}-timeout`}>Timeout (ms)</label>
          <input
            id={`${id}-timeout`}
            inputMode="numeric"
            placeholder={fallback}
            value={form.timeoutMs}
            onChange={(event) => set({ timeoutMs: event.target.value })}
            aria-describedby={`${id}-timeout-help`}
          />
          <p id={`${id}-timeout-help`} className="hint">
            1,000 to 60,000 per attempt
          </p>
        </div>
      </div>
      <HeaderRowsEditor rows={form.headers} onChange={(headers) => set({ headers })} />
    </>
  );
}
