import { type FormEvent, useId, useState } from "react";
import { post } from "../api/client.ts";
import type { DeliveryEvent } from "../api/types.ts";
import { FormActions } from "../components/form-actions.tsx";
import { isoToLocalInput, LOCAL_ZONE, localInputToIso } from "../format.ts";
import { useAction } from "../use-action.ts";
import { DestinationField } from "./destination-field.tsx";
import { parseLabels } from "./labels.ts";
import { EMPTY_OUTCOME_FIELDS, OutcomeFields } from "./outcome-fields.tsx";
import { DeliveryExtras, deliveryExtrasOf, EMPTY_DELIVERY_EXTRAS } from "./policy/delivery-extras.tsx";

/** Schedules one event (POST /api/events): destination, payload, time, and optionally its policy and flow. */
export function NewEventForm({ onSaved, onCancel }: { onSaved: (event: DeliveryEvent) => void; onCancel: () => void }) {
  const id = useId();
  const [destination, setDestination] = useState("");
  const [payload, setPayload] = useState("{}");
  // A minute from now: a time in the past is refused.
  const [when, setWhen] = useState(() => isoToLocalInput(new Date(Date.now() + 120_000).toISOString()));
  const [extras, setExtras] = useState(EMPTY_DELIVERY_EXTRAS);
  const [outcome, setOutcome] = useState(EMPTY_OUTCOME_FIELDS);
  const { busy, error, setError, run } = useAction();
  const submit = (submitted: FormEvent) => {
    submitted.preventDefault();
    const scheduledTime = localInputToIso(when);
    if (!scheduledTime) return setError("Please enter a valid time");
    const more = deliveryExtrasOf(extras);
    if ("problem" in more) return setError(more.problem);
    const labels = parseLabels(outcome.labels);
    if ("problem" in labels) return setError(labels.problem);
    // Left out when empty: an event without them is as before.
    const optional: { labels?: Record<string, string>; callbackUrl?: string } = {};
    if (Object.keys(labels.labels).length > 0) optional.labels = labels.labels;
    if (outcome.callbackUrl.trim()) optional.callbackUrl = outcome.callbackUrl.trim();
    return run(async () =>
      onSaved(
        await post<DeliveryEvent>("/api/events", {
          destination,
          payload,
          scheduledTime,
          ...more.fields,
          ...optional,
        }),
      ),
    );
  };
  return (
    <form onSubmit={submit} className="edit-form">
      <DestinationField id={`${id}-destination`} value={destination} onChange={setDestination} />
      <label htmlFor={`${id}-payload`}>Payload</label>
      <textarea
        id={`${id}-payload`}
        rows={4}
        spellCheck={false}
        value={payload}
        onChange={(event) => setPayload(event.target.value)}
      />
      <label htmlFor={`${id}-when`}>Scheduled time ({LOCAL_ZONE})</label>
      <input
        id={`${id}-when`}
        type="datetime-local"
        step={1}
        required
        value={when}
        onChange={(event) => setWhen(event.target.value)}
      />
      <OutcomeFields
        form={outcome}
        onChange={(change) => setOutcome({ ...outcome, ...change })}
        callbackHelp="Told the event's final outcome (sent or failed) by a signed POST"
      />
      <DeliveryExtras form={extras} onChange={setExtras} />
      <FormActions submit="Schedule the event" busySubmit="Scheduling…" busy={busy} error={error} onCancel={onCancel} />
    </form>
  );
}
