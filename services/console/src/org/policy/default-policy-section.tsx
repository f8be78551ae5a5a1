import { useState } from "react";
import { get } from "../../api/client.ts";
import type { DeliveryPolicy } from "../../api/types.ts";
import { ErrorMessage, Loading, Notice } from "../../components/messages.tsx";
import { useLoad } from "../../use-load.ts";
import { DefaultPolicyForm } from "./default-policy-form.tsx";
import { DefaultPolicySummary } from "./default-policy-summary.tsx";

/** The organization's default delivery policy (GET /api/delivery-policy), with its edit form. */
export function DefaultPolicySection() {
  const loaded = useLoad(() => get<DeliveryPolicy>("/api/delivery-policy"), "delivery-policy");
  const [saved, setSaved] = useState<DeliveryPolicy>();
  const [notice, setNotice] = useState<string>();
  // The form starts over from the stored default after a save (secret values hidden again).
  const [formVersion, setFormVersion] = useState(0);
  const policy = saved ?? loaded.data;
  return (
    <section className="card" aria-labelledby="default-policy-title">
      <h2 id="default-policy-title">Default delivery policy</h2>
      <ErrorMessage>{loaded.error}</ErrorMessage>
      {!policy && loaded.loading && <Loading what="the default delivery policy" />}
      {policy && (
        <>
          <DefaultPolicySummary policy={policy} />
          <p className="hint">
            An event keeps the policy it was created with; a cron job's runs take its own fields over this default.
          </p>
          {notice && <Notice>{notice}</Notice>}
          <DefaultPolicyForm
            key={formVersion}
            policy={policy}
            onSaved={(stored, cleared) => {
              setSaved(stored);
              setFormVersion((n) => n + 1);
              setNotice(cleared ? "The default is cleared." : "The default is saved.");
            }}
          />
        </>
      )}
    </section>
  );
}
