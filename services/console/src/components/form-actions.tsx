import type { ReactNode } from "react";
import { ErrorMessage } from "./messages.tsx";

/**
 * The foot of an edit form: what went wrong, if anything, then its submit button (with its words while
 * it saves, disabled meanwhile), the form's other buttons, and Cancel when the form can be left.
 */
export function FormActions({
  submit,
  busySubmit,
  busy,
  error,
  onCancel,
  children,
}: {
  submit: string;
  busySubmit: string;
  busy: boolean;
  error: string | undefined;
  onCancel?: () => void;
  children?: ReactNode;
}) {
  return (
    <>
      <ErrorMessage>{error}</ErrorMessage>
      <div className="actions-bar">
        <button type="submit" className="primary" disabled={busy}>
          {busy ? busySubmit : submit}
        </button>
        {children}
        {onCancel && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
      </div>
    </>
  );
}
