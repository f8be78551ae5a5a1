import type { ReactNode } from "react";

/** A failure's sentence, announced to screen readers as it appears. */
export function ErrorMessage({ children }: { children: ReactNode }) {
  if (!children) return null;
  return (
    <p className="message message-error" role="alert">
      <span aria-hidden="true">⚠ </span>
      {children}
    </p>
  );
}

/** An outcome (saved, replayed, …), announced politely. */
export function Notice({ children }: { children: ReactNode }) {
  return (
    <p className="message message-ok" role="status">
      {children}
    </p>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="loading" role="status">
      Loading {what}…
    </p>
  );
}
