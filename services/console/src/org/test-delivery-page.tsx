import { type FormEvent, useState } from "react";
import { post } from "../api/client.ts";
import type { TestDeliveryRequest, TestDeliveryResult } from "../api/types.ts";
import { ErrorMessage } from "../components/messages.tsx";
import { ScrollBox } from "../components/scroll-box.tsx";
import { formatDuration } from "../format.ts";
import { useAction } from "../use-action.ts";
import { DestinationField } from "./destination-field.tsx";
import { EMPTY_SENDING_FORM, type SendingForm, sendingFieldsOf } from "./policy/policy-form.ts";
import { SendingFields } from "./policy/sending-fields.tsx";

export function TestDeliveryPage() {
  const [destination, setDestination] = useState("");
  const [payload, setPayload] = useState('{"hello":"world"}');
  const [sending, setSending] = useState<SendingForm>(EMPTY_SENDING_FORM);
  const [result, setResult] = useState<TestDeliveryResult>();
  const { busy, error, setError, run } = useAction();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setResult(undefined);
    const policy = sendingFieldsOf(sending);
    if ("problem" in policy) return setError(policy.problem);
    const request: TestDeliveryRequest = { destination, payload, ...policy.fields };
    return run(async () => setResult(await post<TestDeliveryResult>("/api/events/test", request)));
  };
  const ok = result && result.error === null && result.responseStatus !== null && result.responseStatus < 300;
  return (
    <>
      <h1>Send a test delivery</h1>
      <p className="hint">
        One signed delivery, sent now, exactly as a scheduled one would be (same body, headers and policy). It creates
        no event and does not count against the monthly limit.
      </p>
      <form onSubmit={submit} className="card narrow-form">
        <DestinationField id="test-destination" value={destination} onChange={setDestination} />
        <label htmlFor="test-payload">Payload</label>
        <textarea id="test-payload" rows={5} value={payload} onChange={(event) => setPayload(event.target.value)} />
        <fieldset>
          <legend>Delivery policy</legend>
          <p className="hint">
            Try how the delivery is sent. A field left empty takes the organization's default policy, else the
            deployment's. A test delivery is never retried.
          </p>
          <SendingFields form={sending} onChange={setSending} fallback="Organization's default" />
        </fieldset>
        <ErrorMessage>{error}</ErrorMessage>
        <button type="submit" className="primary" disabled={busy}>
          {busy ? "Sending…" : "Send test delivery"}
        </button>
      </form>
      {result && (
        <section className="card" aria-labelledby="test-result" aria-live="polite">
          <h2 id="test-result">
            <span aria-hidden="true">{ok ? "✓ " : "✕ "}</span>
            {ok ? "The receiver accepted the delivery" : "The delivery did not succeed"}
          </h2>
          <dl className="details">
            <div>
              <dt>Response status</dt>
              <dd>{result.responseStatus ?? "no response"}</dd>
            </div>
            <div>
              <dt>Duration</dt>
              <dd>{formatDuration(result.durationMs)}</dd>
            </div>
            {result.error && (
              <div>
                <dt>Error</dt>
                <dd>{result.error}</dd>
              </div>
            )}
          </dl>
          <h3>Response body</h3>
          <ScrollBox label="Response body" text={result.responseBody ?? "(none)"} />
        </section>
      )}
    </>
  );
}
