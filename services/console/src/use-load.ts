import { useCallback, useEffect, useRef, useState } from "react";
import { errorText } from "./api/client.ts";

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload: () => void;
}

/**
 * Loads with `load` whenever `key` changes, and again on `reload()`; an answer that arrives after a
 * newer request started is dropped. `refreshMs` reloads on a timer (pages that watch progress).
 */
export function useLoad<T>(load: () => Promise<T>, key: string, refreshMs?: number): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const [loading, setLoading] = useState(true);
  const [generation, setGeneration] = useState(0);
  const latest = useRef(0);
  const loadRef = useRef(load);
  loadRef.current = load;

  useEffect(() => {
    const request = ++latest.current;
    setLoading(true);
    loadRef.current().then(
      (value) => {
        if (request !== latest.current) return;
        setData(value);
        setError(undefined);
        setLoading(false);
      },
      (failure: unknown) => {
        if (request !== latest.current) return;
        setError(errorText(failure));
        setLoading(false);
      },
    );
  }, [key, generation]);

  useEffect(() => {
    if (!refreshMs) return undefined;
    const timer = window.setInterval(() => setGeneration((n) => n + 1), refreshMs);
    return () => window.clearInterval(timer);
  }, [refreshMs]);

  const reload = useCallback(() => setGeneration((n) => n + 1), []);
  return { data, error, loading, reload };
}
