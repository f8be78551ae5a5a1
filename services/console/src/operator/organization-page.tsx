import { type FormEvent, useState } from "react";
import { get, post } from "../api/client.ts";
import type {
  ApiKey,
  CreatedApiKey,
  Membership,
  Organization,
  RotatedApiKey,
  RotatedSigningSecret,
} from "../api/types.ts";
import { ConfirmDialog, Dialog, DialogActions } from "../components/dialog.tsx";
import { ErrorMessage, Loading, Notice } from "../components/messages.tsx";
import { SecretReveal } from "../components/secret-reveal.tsx";
import { StatusBadge } from "../components/status-badge.tsx";
import { RowActions, TableHead } from "../components/table.tsx";
import { TableScroll } from "../components/table-scroll.tsx";
import { Time } from "../components/time.tsx";
import { Link } from "../router.tsx";
import { useAction } from "../use-action.ts";
import { useLoad } from "../use-load.ts";

/** A secret just made, with what to say about it; shown once in a dialog. */
interface Revealed {
  title: string;
  label: string;
  value: string;
  note?: string;
}

function Keys({ orgId, onReveal }: { orgId: string; onReveal: (revealed: Revealed) => void }) {
  const keys = useLoad(() => get<ApiKey[]>(`/api/admin/organizations/${orgId}/keys`), orgId);
  const { error, run } = useAction();
  const [notice, setNotice] = useState<string>();
  const [confirming, setConfirming] = useState<ApiKey>();

  const act = async (action: () => Promise<void>) => {
    setNotice(undefined);
    await run(action);
    keys.reload();
  };
  const create = () =>
    act(async () => {
      const key = await post<CreatedApiKey>(`/api/admin/organizations/${orgId}/keys`);
      onReveal({ title: "New API key", label: `API key ${key.keyId}`, value: key.apiKey });
    });
  const rotate = (key: ApiKey) =>
    act(async () => {
      const rotated = await post<RotatedApiKey>(`/api/admin/keys/${key.id}/rotate`);
      onReveal({
        title: "API key replaced",
        label: `API key ${rotated.keyId}`,
        value: rotated.apiKey,
        note: `${key.prefix}… (${key.id}) stopped working.`,
      });
    });
  const revoke = (key: ApiKey) =>
    act(async () => {
      setConfirming(undefined);
      await post(`/api/admin/keys/${key.id}/revoke`);
      setNotice(`API key ${key.prefix}… is revoked: it stopped working.`);
    });

  return (
    <section className="card" aria-labelledby="keys-title">
      <h2 id="keys-title">API keys</h2>
      <ErrorMessage>{keys.error ?? error}</ErrorMessage>
      {notice && <Notice>{notice}</Notice>}
      {!keys.data && keys.loading && <Loading what="API keys" />}
      {keys.data && (
        <TableScroll label="API keys">
          <table>
            <TableHead columns={["Key", "Id", "Status", "Created", "Last used"]} actions />
            <tbody>
              {keys.data.map((key) => (
                <tr key={key.id}>
                  <td className="mono">{key.prefix}…</td>
                  <td className="mono">{key.id}</td>
                  <td>
                    {key.revokedAt ? (
                      <>
                        <StatusBadge status="Revoked" /> <Time value={key.revokedAt} />
                      </>
                    ) : (
                      <StatusBadge status="Active" />
                    )}
                  </td>
                  <td>
                    <Time value={key.createdAt} />
                  </td>
                  <td>
                    <Time value={key.lastUsedAt} />
                  </td>
                  <RowActions>
                    {!key.revokedAt && (
                      <>
                        <button type="button" onClick={() => rotate(key)} aria-label={`Rotate key ${key.prefix}`}>
                          Rotate
                        </button>
                        <button
                          type="button"
                          className="danger"
                          onClick={() => setConfirming(key)}
                          aria-label={`Revoke key ${key.prefix}`}
                        >
                          Revoke
                        </button>
                      </>
                    )}
                  </RowActions>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
      <button type="button" className="primary" onClick={create}>
        Create an API key
      </button>
      <ConfirmDialog
        title="Revoke the API key?"
        subject={confirming}
        onClose={() => setConfirming(undefined)}
        onConfirm={revoke}
        confirm="Revoke the key"
        tone="danger"
        cancel="Keep it"
      >
        {(key) => (
          <p>
            <span className="mono">{key.prefix}…</span> stops working at once: every call made with it is refused.
          </p>
        )}
      </ConfirmDialog>
    </section>
  );
}

function SigningSecret({
  organization,
  onChanged,
  onReveal,
}: {
  organization: Organization;
  onChanged: () => void;
  onReveal: (revealed: Revealed) => void;
}) {
  const { error, run } = useAction();
  const [notice, setNotice] = useState<string>();
  const until = organization.previousSecretValidUntil ?? null;
  const rotate = () => {
    setNotice(undefined);
    return run(async () => {
      const rotated = await post<RotatedSigningSecret>(
        `/api/admin/organizations/${organization.id}/signing-secret/rotate`,
      );
      onReveal({
        title: "Signing secret rotated",
        label: "New signing secret",
        value: rotated.signingSecret,
        note: rotated.previousSecretValidUntil
          ? `Deliveries carry signatures with both secrets until ${new Date(rotated.previousSecretValidUntil).toLocaleString()}.`
          : "The previous secret no longer signs deliveries.",
      });
      onChanged();
    });
  };
  const endOverlap = () =>
    run(async () => {
      await post(`/api/admin/organizations/${organization.id}/signing-secret/end-overlap`);
      setNotice("The previous signing secret no longer signs deliveries.");
      onChanged();
    });
  return (
    <section className="card" aria-labelledby="secret-title">
      <h2 id="secret-title">Signing secret</h2>
      {until ? (
        <p>
          Rotation overlap: the previous secret still signs deliveries until{" "}
          <time dateTime={until}>{new Date(until).toLocaleString()}</time>.
        </p>
      ) : (
        <p>One secret signs deliveries (no rotation overlap).</p>
      )}
      <div className="actions-bar">
        <button type="button" onClick={rotate}>
          Rotate the signing secret
        </button>
        {until && (
          <button type="button" className="danger" onClick={endOverlap}>
            End the overlap now
          </button>
        )}
      </div>
      {notice && <Notice>{notice}</Notice>}
      <ErrorMessage>{error}</ErrorMessage>
    </section>
  );
}

/** The organization's accounts, the owner first; reloaded when one is added. */
function MemberList({ orgId, version }: { orgId: string; version: number }) {
  const members = useLoad(() => get<Membership[]>(`/api/admin/organizations/${orgId}/members`), `${orgId}|${version}`);
  return (
    <>
      <ErrorMessage>{members.error}</ErrorMessage>
      {!members.data && members.loading && <Loading what="the members" />}
      {members.data && (
        <ul className="member-list" aria-label="Members">
          {members.data.map((member) => (
            <li key={member.accountId}>
              {member.email} <span className="tag">{member.role}</span>{" "}
              <span className="hint">
                since <Time value={member.since} />
              </span>
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

function AddMember({ orgId, onAdded }: { orgId: string; onAdded: () => void }) {
  const [email, setEmail] = useState("");
  const { error, run } = useAction();
  const [notice, setNotice] = useState<string>();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setNotice(undefined);
    return run(async () => {
      await post(`/api/admin/organizations/${orgId}/members`, { email });
      setNotice(`${email} is now a member.`);
      setEmail("");
      onAdded();
    });
  };
  return (
    <form onSubmit={submit} className="inline-form">
      <label htmlFor="member-email">Add a member by email</label>
      <input id="member-email" type="email" required value={email} onChange={(event) => setEmail(event.target.value)} />
      <button type="submit">Add member</button>
      <ErrorMessage>{error}</ErrorMessage>
      {notice && <Notice>{notice}</Notice>}
    </form>
  );
}

export function OrganizationPage({ id }: { id: string }) {
  const organizations = useLoad(() => get<Organization[]>("/api/admin/organizations"), "organizations");
  const [revealed, setRevealed] = useState<Revealed>();
  const [membersVersion, setMembersVersion] = useState(0);
  const organization = organizations.data?.find((candidate) => candidate.id === id);
  return (
    <>
      <p>
        <Link to="/">← Organizations</Link>
      </p>
      <h1>{organization ? organization.name : "Organization"}</h1>
      <ErrorMessage>{organizations.error}</ErrorMessage>
      {!organizations.data && organizations.loading && <Loading what="the organization" />}
      {organizations.data && !organization && <p>No organization {id}.</p>}
      {organization && (
        <>
          <section className="card" aria-labelledby="org-title">
            <h2 id="org-title">Members</h2>
            <dl className="details">
              <div>
                <dt>Id</dt>
                <dd className="mono">{organization.id}</dd>
              </div>
              <div>
                <dt>Owner</dt>
                <dd>{organization.ownerEmail}</dd>
              </div>
              <div>
                <dt>Members</dt>
                <dd>{organization.members}</dd>
              </div>
              <div>
                <dt>Created</dt>
                <dd>
                  <Time value={organization.createdAt} />
                </dd>
              </div>
            </dl>
            <MemberList orgId={id} version={membersVersion} />
            <AddMember
              orgId={id}
              onAdded={() => {
                organizations.reload();
                setMembersVersion((n) => n + 1);
              }}
            />
          </section>
          <Keys orgId={id} onReveal={setRevealed} />
          <SigningSecret organization={organization} onChanged={organizations.reload} onReveal={setRevealed} />
        </>
      )}
      <Dialog title={revealed?.title ?? ""} open={revealed !== undefined} onClose={() => setRevealed(undefined)}>
        {revealed && (
          <>
            <SecretReveal label={revealed.label} value={revealed.value} />
            {revealed.note && <p>{revealed.note}</p>}
            <DialogActions confirm="Done" onConfirm={() => setRevealed(undefined)} />
          </>
        )}
      </Dialog>
    </>
  );
}
