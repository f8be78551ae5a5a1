import { useState } from "react";
import { errorText } from "./api/client.ts";

/**
 * A call to the API from a form, a dialog or a button: `busy` while it runs (for the buttons that wait
 * on it), and `error`, the sentence of what went wrong (the API's refusal, or a form's own problem given
 * to `setError`). A new call clears it.
 */
export function useAction(initialError?: string) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(initialError);
  const run = async (call: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await call();
    } catch (failure) {
      setError(errorText(failure));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, setError, run };
}
