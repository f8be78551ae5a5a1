import { DefaultPolicySection } from "./policy/default-policy-section.tsx";

/** The organization's own settings, as its API key may change them. */
export function SettingsPage() {
  return (
    <>
      <h1>Settings</h1>
      <DefaultPolicySection />
    </>
  );
}
