import { type FormEvent, useState } from "react";
import { get, post } from "../api/client.ts";
import type { CreatedOrganization, Organization } from "../api/types.ts";
import { Dialog, DialogActions } from "../components/dialog.tsx";
import { ErrorMessage, Loading } from "../components/messages.tsx";
import { SecretReveal } from "../components/secret-reveal.tsx";
import { TableHead } from "../components/table.tsx";
import { TableScroll } from "../components/table-scroll.tsx";
import { Time } from "../components/time.tsx";
import { Link } from "../router.tsx";
import { useAction } from "../use-action.ts";
import { useLoad } from "../use-load.ts";

function CreateOrganization({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState("");
  const [email, setEmail] = useState("");
  const { error, run } = useAction();
  const [created, setCreated] = useState<CreatedOrganization>();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    return run(async () => {
      setCreated(await post<CreatedOrganization>("/api/admin/organizations", { name, email }));
      setName("");
      setEmail("");
      onCreated();
    });
  };
  return (
    <section className="card" aria-labelledby="create-org-title">
      <h2 id="create-org-title">Create an organization</h2>
      <form onSubmit={submit} className="inline-form wrap">
        <div className="field">
          <label htmlFor="org-name">Name</label>
          <input
            id="org-name"
            required
            maxLength={200}
            value={name}
            onChange={(event) => setName(event.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor="org-email">Owner's email</label>
          <input
            id="org-email"
            type="email"
            required
            value={email}
            onChange={(event) => setEmail(event.target.value)}
          />
        </div>
        <button type="submit" className="primary">
          Create
        </button>
      </form>
      <ErrorMessage>{error}</ErrorMessage>
      <Dialog title="Organization created" open={created !== undefined} onClose={() => setCreated(undefined)}>
        {created && (
          <>
            <p>
              <Link to={`/organizations/${created.orgId}`} className="mono">
                {created.orgId}
              </Link>{" "}
              is ready. Give its owner the API key and the signing secret.
            </p>
            <SecretReveal label="API key" value={created.apiKey} />
            <SecretReveal label="Signing secret" value={created.signingSecret} />
            <DialogActions confirm="Done" onConfirm={() => setCreated(undefined)} />
          </>
        )}
      </Dialog>
    </section>
  );
}

export function OrganizationsPage() {
  const organizations = useLoad(() => get<Organization[]>("/api/admin/organizations"), "organizations");
  return (
    <>
      <h1>Organizations</h1>
      <ErrorMessage>{organizations.error}</ErrorMessage>
      {!organizations.data && organizations.loading && <Loading what="organizations" />}
      {organizations.data && (
        <TableScroll label="Organizations">
          <table>
            <TableHead
              columns={[
                "Organization",
                "Id",
                "Owner",
                "Members",
                "Active API keys",
                "Previous secret valid until",
                "Created",
              ]}
            />
            <tbody>
              {organizations.data.map((organization) => (
                <tr key={organization.id}>
                  <td>
                    <Link to={`/organizations/${organization.id}`}>{organization.name}</Link>
                  </td>
                  <td className="mono">{organization.id}</td>
                  <td>{organization.ownerEmail}</td>
                  <td>{organization.members}</td>
                  <td>{organization.activeApiKeys}</td>
                  <td>
                    {organization.previousSecretValidUntil ? (
                      <Time value={organization.previousSecretValidUntil} />
                    ) : (
                      "no overlap"
                    )}
                  </td>
                  <td>
                    <Time value={organization.createdAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
      <CreateOrganization onCreated={organizations.reload} />
    </>
  );
}
