import { type FormEvent, useId, useState } from "react";
import { request } from "../api/client.ts";
import type { Session } from "../api/types.ts";
import { ErrorMessage } from "../components/messages.tsx";
import { useAction } from "../use-action.ts";

/**
 * Two ways in: an organization's API key or the operator's ADMIN_TOKEN. The secret goes to the API
 * once, which answers with an HttpOnly session cookie; the field is emptied right away and the page
 * keeps nothing of it. When a call ended the session, the API's reason is shown until the next try.
 */
export function SignInPage({
  onSignedIn,
  endedBecause,
}: {
  onSignedIn: (session: Session) => void;
  endedBecause?: string | undefined;
}) {
  const [mode, setMode] = useState<"organization" | "operator">("organization");
  const [secret, setSecret] = useState("");
  const { busy, error, run } = useAction(endedBecause);
  const fieldId = useId();

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const value = secret;
    setSecret("");
    return run(async () => {
      const answer =
        mode === "organization"
          ? await request<Session>(
              "POST",
              "/console/api/session",
              { apiKey: value.trim() },
              { quietUnauthorized: true },
            )
          : await request<Session>(
              "POST",
              "/console/api/operator-session",
              { adminToken: value.trim() },
              { quietUnauthorized: true },
            );
      onSignedIn(answer.body);
    });
  };

  const organization = mode === "organization";
  return (
    <main id="main" className="sign-in">
      <h1>
        <span className="brand-mark" aria-hidden="true">
          ◷
        </span>{" "}
        Punctual console
      </h1>
      <form onSubmit={submit} className="card" aria-describedby={`${fieldId}-help`}>
        <fieldset className="segmented">
          <legend>Sign in as</legend>
          <label>
            <input
              type="radio"
              name="mode"
              value="organization"
              checked={organization}
              onChange={() => setMode("organization")}
            />
            An organization
          </label>
          <label>
            <input
              type="radio"
              name="mode"
              value="operator"
              checked={!organization}
              onChange={() => setMode("operator")}
            />
            The operator
          </label>
        </fieldset>
        <label htmlFor={fieldId}>{organization ? "API key" : "Admin token"}</label>
        <input
          id={fieldId}
          name={organization ? "apiKey" : "adminToken"}
          type="password"
          autoComplete="off"
          spellCheck={false}
          required
          value={secret}
          onChange={(event) => setSecret(event.target.value)}
          placeholder={organization ? "pk_…" : "ADMIN_TOKEN"}
        />
        <p id={`${fieldId}-help`} className="hint">
          {organization
            ? "The key opens a session for its organization; the console does not keep the key."
            : "The deployment's ADMIN_TOKEN opens an operator session; the console does not keep it."}
        </p>
        <ErrorMessage>{error}</ErrorMessage>
        <button type="submit" className="primary" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}
