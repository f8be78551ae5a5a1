import { useState } from "react";

/**
 * A secret the API shows once (a new API key, a signing secret): visible until the dialog closes,
 * with a copy button; the console does not keep it anywhere else.
 */
export function SecretReveal({ label, value }: { label: string; value: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied(true);
    } catch {
      setCopied(false);
    }
  };
  return (
    <div className="secret">
      <p className="secret-label">{label}</p>
      <output className="secret-value mono" aria-label={label}>
        {value}
      </output>
      <button type="button" onClick={copy}>
        {copied ? "Copied" : "Copy"}
      </button>
      <p className="hint">
        <span aria-hidden="true">⚠ </span>Shown once: store it now. It cannot be displayed again.
      </p>
    </div>
  );
}
