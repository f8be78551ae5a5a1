import { type ReactNode, useCallback, useEffect, useState } from "react";
import { onSignedOut, request, showOrganization } from "./api/client.ts";
import type { Session } from "./api/types.ts";
import { Loading } from "./components/messages.tsx";
import { Layout, type NavItem } from "./layout.tsx";
import { HealthPage } from "./operator/health-page.tsx";
import { OrganizationPage } from "./operator/organization-page.tsx";
import { OrganizationsPage } from "./operator/organizations-page.tsx";
import { CronJobPage } from "./org/cron-jobs/cron-job-page.tsx";
import { CronJobsPage } from "./org/cron-jobs/cron-jobs-page.tsx";
import { DestinationsPage } from "./org/destinations/destinations-page.tsx";
import { EventPage } from "./org/event-page.tsx";
import { EventsPage } from "./org/events-page.tsx";
import { FlowsPage } from "./org/flows/flows-page.tsx";
import { OverviewPage } from "./org/overview-page.tsx";
import { SettingsPage } from "./org/settings-page.tsx";
import { TestDeliveryPage } from "./org/test-delivery-page.tsx";
import { WebhooksPage } from "./org/webhooks/webhooks-page.tsx";
import { match, navigate, useLocation } from "./router.tsx";
import { SignInPage } from "./session/sign-in-page.tsx";

const ORGANIZATION_NAV: NavItem[] = [
  { to: "/", label: "Overview" },
  { to: "/events", label: "Events" },
  { to: "/cron-jobs", label: "Cron jobs" },
  { to: "/flows", label: "Flows" },
  { to: "/destinations", label: "Destinations" },
  { to: "/webhooks", label: "Webhooks" },
  { to: "/test-delivery", label: "Test delivery" },
  { to: "/settings", label: "Settings" },
];

const OPERATOR_NAV: NavItem[] = [
  { to: "/", label: "Organizations" },
  { to: "/health", label: "Service health" },
];

type View = (params: Record<string, string>) => ReactNode;

/** The first pattern that matches the path gives the page. */
function route(routes: [string, View][], path: string): ReactNode {
  for (const [pattern, view] of routes) {
    const params = match(pattern, path);
    if (params) return view(params);
  }
  return <NotFound />;
}

const ORGANIZATION_ROUTES: [string, View][] = [
  ["/", () => <OverviewPage />],
  ["/events", () => <EventsPage />],
  ["/events/:id", ({ id = "" }) => <EventPage key={id} id={id} />],
  ["/cron-jobs", () => <CronJobsPage />],
  ["/cron-jobs/:id", ({ id = "" }) => <CronJobPage key={id} id={id} />],
  ["/flows", () => <FlowsPage />],
  ["/destinations", () => <DestinationsPage />],
  ["/webhooks", () => <WebhooksPage />],
  ["/test-delivery", () => <TestDeliveryPage />],
  ["/settings", () => <SettingsPage />],
];

const OPERATOR_ROUTES: [string, View][] = [
  ["/", () => <OrganizationsPage />],
  ["/organizations/:id", ({ id = "" }) => <OrganizationPage key={id} id={id} />],
  ["/health", () => <HealthPage />],
];

function NotFound() {
  return (
    <>
      <h1>Not found</h1>
      <p>There is no page at this address in the console.</p>
    </>
  );
}

/** The session the page shows from now on; every call says its organization (see showOrganization). */
function shown(session: Session | null): Session | null {
  showOrganization(session?.kind === "organization" ? session.orgId : undefined);
  return session;
}

export function App() {
  const [session, setSession] = useState<Session | null>();
  /** Why the console went back to the sign-in form while in use (the API's sentence). */
  const [endedBecause, setEndedBecause] = useState<string>();
  const { path } = useLocation();

  useEffect(() => {
    // optional=true: signed out is a 204, not a 401 the browser would log as a failed request.
    request<Session | undefined>("GET", "/console/api/session?optional=true", undefined, {
      quietUnauthorized: true,
    }).then(
      (answer) => setSession(shown(answer.body ?? null)),
      () => setSession(shown(null)),
    );
    return onSignedOut((message) => {
      setEndedBecause(message);
      setSession(shown(null));
    });
  }, []);

  const signOut = useCallback(async () => {
    await request("DELETE", "/console/api/session", undefined, { quietUnauthorized: true }).catch(() => undefined);
    setEndedBecause(undefined);
    setSession(shown(null));
    navigate("/", { replace: true });
  }, []);

  const signedIn = useCallback((opened: Session) => {
    setEndedBecause(undefined);
    setSession(shown(opened));
    navigate("/", { replace: true });
  }, []);

  if (session === undefined) {
    return (
      <main id="main">
        <Loading what="the console" />
      </main>
    );
  }
  if (session === null) return <SignInPage onSignedIn={signedIn} endedBecause={endedBecause} />;

  const operator = session.kind === "operator";
  return (
    <Layout
      nav={operator ? OPERATOR_NAV : ORGANIZATION_NAV}
      path={path}
      who={operator ? "Operator" : (session.orgName ?? session.orgId ?? "Organization")}
      onSignOut={signOut}
    >
      {route(operator ? OPERATOR_ROUTES : ORGANIZATION_ROUTES, path)}
    </Layout>
  );
}
