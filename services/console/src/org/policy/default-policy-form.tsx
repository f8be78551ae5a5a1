import { type FormEvent, useState } from "react";
import { put } from "../../api/client.ts";
import type { DeliveryPolicy } from "../../api/types.ts";
import { FormActions } from "../../components/form-actions.tsx";
import { useAction } from "../../use-action.ts";
import { policyFormOf, policyOfForm } from "./policy-form.ts";
import { RetryFields } from "./retry-fields.tsx";
import { SendingFields } from "./sending-fields.tsx";

const PATH = "/api/delivery-policy";

/** Edits the organization's default policy as a whole (PUT); "Clear" stores `{}`. */
export function DefaultPolicyForm({
  policy,
  onSaved,
}: {
  policy: DeliveryPolicy;
  onSaved: (saved: DeliveryPolicy, cleared: boolean) => void;
}) {
  const [form, setForm] = useState(() => policyFormOf(policy));
  const { busy, error, setError, run } = useAction();
  const save = (body: DeliveryPolicy) =>
    run(async () => onSaved(await put<DeliveryPolicy>(PATH, body), Object.keys(body).length === 0));
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const outcome = policyOfForm(form);
    if ("problem" in outcome) return setError(outcome.problem);
    return save(outcome.policy);
  };
  return (
    <form onSubmit={submit} className="edit-form policy-form" aria-labelledby="default-policy-edit">
      <h3 id="default-policy-edit">Edit the default</h3>
      <p className="hint">A field left empty is not part of the default: the deployment's value applies.</p>
      <SendingFields
        form={form}
        onChange={(sending) => setForm({ ...form, ...sending })}
        fallback="Deployment's default"
      />
      <RetryFields form={form} onChange={setForm} />
      <FormActions submit="Save the default" busySubmit="Saving…" busy={busy} error={error}>
        <button type="button" className="danger" disabled={busy} onClick={() => save({})}>
          Clear the default
        </button>
      </FormActions>
    </form>
  );
}
