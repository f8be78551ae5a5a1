import { type ReactNode, useEffect, useId, useRef } from "react";
import { ErrorMessage } from "./messages.tsx";

/**
 * A modal dialog on the native `<dialog>`: the browser keeps focus inside it, Escape closes it, and
 * focus returns to what opened it.
 */
export function Dialog({
  title,
  open,
  onClose,
  wide = false,
  children,
}: {
  title: string;
  open: boolean;
  onClose: () => void;
  /** A dialog for a form with a preview beside it: as wide as the page allows. */
  wide?: boolean;
  children: ReactNode;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) {
      const opener = document.activeElement as HTMLElement | null;
      dialog.showModal();
      return () => opener?.focus();
    }
    if (!open && dialog.open) dialog.close();
    return undefined;
  }, [open]);
  return (
    <dialog
      ref={ref}
      className={wide ? "wide" : undefined}
      aria-labelledby={titleId}
      onClose={onClose}
      onCancel={onClose}
    >
      {open && (
        <>
          <header className="dialog-header">
            <h2 id={titleId}>{title}</h2>
            <button type="button" className="icon-button" onClick={onClose} aria-label="Close">
              ×
            </button>
          </header>
          {children}
        </>
      )}
    </dialog>
  );
}

/**
 * The foot of a dialog: what went wrong, if anything, then the button that acts (with its words while
 * it works, disabled meanwhile) and the one that closes the dialog without acting. Without `onConfirm`
 * the button submits the dialog's form; without `onCancel` it is the only one (Done).
 */
export function DialogActions({
  confirm,
  busyConfirm,
  tone = "primary",
  onConfirm,
  busy = false,
  disabled = false,
  cancel = "Cancel",
  onCancel,
  error,
}: {
  confirm: string;
  busyConfirm?: string;
  /** Danger for what removes or stops something. */
  tone?: "primary" | "danger";
  onConfirm?: () => void;
  busy?: boolean;
  /** The action cannot be taken yet (nothing to act on). */
  disabled?: boolean;
  cancel?: string;
  onCancel?: () => void;
  error?: string;
}) {
  return (
    <>
      <ErrorMessage>{error}</ErrorMessage>
      <div className="dialog-actions">
        <button type={onConfirm ? "button" : "submit"} className={tone} onClick={onConfirm} disabled={busy || disabled}>
          {busy ? (busyConfirm ?? confirm) : confirm}
        </button>
        {onCancel && (
          <button type="button" onClick={onCancel}>
            {cancel}
          </button>
        )}
      </div>
    </>
  );
}

/**
 * Asks to confirm an action on one record, `subject`: open while there is one, it says what the action
 * does to it (`children`) above the button that acts and the one that keeps it as it is.
 */
export function ConfirmDialog<T>({
  title,
  subject,
  onClose,
  onConfirm,
  confirm,
  tone,
  cancel,
  children,
}: {
  title: string;
  subject: T | undefined;
  onClose: () => void;
  onConfirm: (subject: T) => void;
  confirm: string;
  tone?: "primary" | "danger";
  cancel?: string;
  children: (subject: T) => ReactNode;
}) {
  return (
    <Dialog title={title} open={subject !== undefined} onClose={onClose}>
      {subject !== undefined && (
        <>
          {children(subject)}
          <DialogActions
            confirm={confirm}
            tone={tone}
            onConfirm={() => onConfirm(subject)}
            cancel={cancel}
            onCancel={onClose}
          />
        </>
      )}
    </Dialog>
  );
}
