import { type FormEvent, useId, useState } from "react";
import { WEBHOOK_TYPES, type Webhook, type WebhookType } from "../../api/types.ts";
import { ConfirmDialog, Dialog } from "../../components/dialog.tsx";
import { FormActions } from "../../components/form-actions.tsx";
import { ErrorMessage, Loading, Notice } from "../../components/messages.tsx";
import { RowActions, TableHead } from "../../components/table.tsx";
import { TableScroll } from "../../components/table-scroll.tsx";
import { Time } from "../../components/time.tsx";
import { useAction } from "../../use-action.ts";
import { useLoad } from "../../use-load.ts";
import { useRowAction } from "../../use-row-action.ts";
import { createWebhook, deleteWebhook, listWebhooks } from "./webhook-calls.ts";
import { MAX_WEBHOOKS, WEBHOOK_TYPE_MEANINGS, webhookRequestOf } from "./webhook-form.ts";

function NewWebhookForm({ onSaved, onCancel }: { onSaved: (webhook: Webhook) => void; onCancel: () => void }) {
  const id = useId();
  const [url, setUrl] = useState("");
  const [checked, setChecked] = useState<ReadonlySet<WebhookType>>(new Set());
  const { busy, error, setError, run } = useAction();
  const toggle = (type: WebhookType, on: boolean) => {
    const next = new Set(checked);
    if (on) next.add(type);
    else next.delete(type);
    setChecked(next);
    setError(undefined);
  };
  const submit = (submitted: FormEvent) => {
    submitted.preventDefault();
    const read = webhookRequestOf(url, checked);
    if ("problem" in read) return setError(read.problem);
    return run(async () => onSaved(await createWebhook(read.body)));
  };
  return (
    <form onSubmit={submit} className="edit-form">
      <label htmlFor={`${id}-url`}>URL</label>
      <input
        id={`${id}-url`}
        type="url"
        required
        placeholder="https://example.com/punctual-notices"
        value={url}
        onChange={(event) => {
          setUrl(event.target.value);
          setError(undefined);
        }}
      />
      <fieldset className="webhook-types">
        <legend>Notices</legend>
        {WEBHOOK_TYPES.map((type) => (
          <label key={type} className="checkbox">
            <input
              type="checkbox"
              checked={checked.has(type)}
              onChange={(event) => toggle(type, event.target.checked)}
            />
            <span className="mono">{type}</span> {WEBHOOK_TYPE_MEANINGS[type]}
          </label>
        ))}
      </fieldset>
      <FormActions submit="Add the webhook" busySubmit="Adding…" busy={busy} error={error} onCancel={onCancel} />
    </form>
  );
}

/** The organization's operational webhooks: where notices of failures, destination health and quota go. */
export function WebhooksPage() {
  const loaded = useLoad(listWebhooks, "webhooks");
  const [adding, setAdding] = useState(false);
  const [confirming, setConfirming] = useState<Webhook>();
  const { notice, setNotice, error, act } = useRowAction();
  const remove = (webhook: Webhook) => {
    setConfirming(undefined);
    return act(webhook.id, async () => {
      await deleteWebhook(webhook.id);
      loaded.reload();
      return `The webhook to ${webhook.url} is deleted: it receives no more notices.`;
    });
  };
  const full = (loaded.data?.length ?? 0) >= MAX_WEBHOOKS;
  return (
    <>
      <h1>Webhooks</h1>
      <p className="hint">
        Each webhook receives signed POSTs of the notices it chose, signed as deliveries are. At most {MAX_WEBHOOKS}.
      </p>
      <div className="actions-bar">
        <button
          type="button"
          className="primary"
          onClick={() => {
            setNotice(undefined);
            setAdding(true);
          }}
          disabled={full}
        >
          New webhook
        </button>
        {full && <span className="hint">The organization has its {MAX_WEBHOOKS} webhooks.</span>}
      </div>
      <Dialog title="New webhook" open={adding} onClose={() => setAdding(false)}>
        {adding && (
          <NewWebhookForm
            onCancel={() => setAdding(false)}
            onSaved={(webhook) => {
              setAdding(false);
              setNotice(`The webhook to ${webhook.url} is added.`);
              loaded.reload();
            }}
          />
        )}
      </Dialog>
      <ErrorMessage>{loaded.error}</ErrorMessage>
      {notice && <Notice>{notice}</Notice>}
      <ErrorMessage>{error}</ErrorMessage>
      {!loaded.data && loaded.loading && <Loading what="webhooks" />}
      {loaded.data && loaded.data.length === 0 && <p>No webhook yet.</p>}
      {loaded.data && loaded.data.length > 0 && (
        <TableScroll label="Webhooks">
          <table className="webhooks-table">
            <TableHead columns={["URL", "Notices", "Added"]} actions />
            <tbody>
              {loaded.data.map((webhook) => (
                <tr key={webhook.id}>
                  <th scope="row" className="url">
                    {webhook.url}
                  </th>
                  <td>
                    {webhook.types.map((type) => (
                      <span key={type} className="tag mono">
                        {type}
                      </span>
                    ))}
                  </td>
                  <td>
                    <Time value={webhook.createdAt} />
                  </td>
                  <RowActions>
                    <button
                      type="button"
                      className="danger"
                      onClick={() => setConfirming(webhook)}
                      aria-label={`Delete the webhook to ${webhook.url}`}
                    >
                      Delete
                    </button>
                  </RowActions>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
      <ConfirmDialog
        title="Delete the webhook?"
        subject={confirming}
        onClose={() => setConfirming(undefined)}
        onConfirm={remove}
        confirm="Delete it"
        tone="danger"
        cancel="Keep it"
      >
        {(webhook) => (
          <p>
            <span className="url">{webhook.url}</span> receives no more notices.
          </p>
        )}
      </ConfirmDialog>
    </>
  );
}
