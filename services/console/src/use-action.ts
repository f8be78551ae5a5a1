import { useState } from "react";
import { errorText } from "./api/client.ts";

/**
 * A form's or a dialog's call to the API: `busy` while it runs, and `error`, the sentence of what went
 * wrong (the API's refusal, or the form's own problem given to `setError`). A new call clears it.
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
