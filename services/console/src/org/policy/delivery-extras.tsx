import { useId } from "react";
import type { DeliveryPolicy } from "../../api/types.ts";
import { type PolicyForm, policyFormOf, policyOfForm } from "./policy-form.ts";
import { RetryFields } from "./retry-fields.tsx";
import { SendingFields } from "./sending-fields.tsx";

// What a new event or cron job may set beside its timing: its own delivery policy (each field left
// empty takes the organization's default) and the flow it goes through.

export interface DeliveryExtrasForm {
  policy: PolicyForm;
  flowKey: string;
}

export const EMPTY_DELIVERY_EXTRAS: DeliveryExtrasForm = { policy: policyFormOf({}), flowKey: "" };

/** The fields of a create request the extras set (none when left empty), or the first problem found. */
export function deliveryExtrasOf(
  form: DeliveryExtrasForm,
): { fields: DeliveryPolicy & { flowKey?: string } } | { problem: string } {
  const outcome = policyOfForm(form.policy);
  if ("problem" in outcome) return outcome;
  const flowKey = form.flowKey.trim();
  return { fields: { ...outcome.policy, ...(flowKey === "" ? {} : { flowKey }) } };
}

/** Folded by default: most deliveries take the organization's policy and no flow. */
export function DeliveryExtras({
  form,
  onChange,
}: {
  form: DeliveryExtrasForm;
  onChange: (form: DeliveryExtrasForm) => void;
}) {
  const id = useId();
  return (
    <details className="delivery-extras">
      <summary>Delivery policy and flow (optional)</summary>
      <label htmlFor={`${id}-flow-key`}>Flow key</label>
      <input
        id={`${id}-flow-key`}
        value={form.flowKey}
        spellCheck={false}
        onChange={(event) => onChange({ ...form, flowKey: event.target.value })}
        aria-describedby={`${id}-flow-key-help`}
      />
      <p id={`${id}-flow-key-help`} className="hint">
        Deliveries with the same key go through that flow's limits; empty is none.
      </p>
      <SendingFields
        form={form.policy}
        onChange={(sending) => onChange({ ...form, policy: { ...form.policy, ...sending } })}
        fallback="The organization's default"
      />
      <RetryFields form={form.policy} onChange={(policy) => onChange({ ...form, policy })} />
    </details>
  );
}
