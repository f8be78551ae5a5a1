import { useState } from "react";
import { errorText } from "./api/client.ts";

/**
 * A list page's action on one of its records (reset, pause, delete): `busyKey`, the record's key while
 * it runs, so that its buttons wait; then what it came to, the `notice` the action answers or the API's
 * `error`. A new action clears both.
 */
export function useRowAction() {
  const [busyKey, setBusyKey] = useState<string>();
  const [notice, setNotice] = useState<string>();
  const [error, setError] = useState<string>();
  const act = async (key: string, action: () => Promise<string>) => {
    setBusyKey(key);
    setError(undefined);
    setNotice(undefined);
    try {
      setNotice(await action());
    } catch (failure) {
      setError(errorText(failure));
    } finally {
      setBusyKey(undefined);
    }
  };
  return { busyKey, notice, setNotice, error, setError, act };
}
