// Every call goes to this origin with the session cookie; the API answers errors as {"message"}.

/** An answer other than 2xx, with the API's own sentence. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export interface ApiAnswer<T> {
  body: T;
  headers: Headers;
}

type Query = Record<string, string | number | readonly string[] | undefined>;

/** `/api/events` + `{status: "Sent", cursor: undefined}` is `/api/events?status=Sent`; a list repeats its name. */
export function withQuery(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (Array.isArray(value)) for (const item of value) params.append(name, item);
    else if (value !== undefined && value !== "") params.set(name, String(value));
  }
  const search = params.toString();
  return search ? `${path}?${search}` : path;
}

/** Listeners told when any call answers 401 (with the API's sentence): the session ended (expired, logged out elsewhere). */
const signedOutListeners = new Set<(message: string) => void>();

export function onSignedOut(listener: (message: string) => void): () => void {
  signedOutListeners.add(listener);
  return () => signedOutListeners.delete(listener);
}

/**
 * The organization the page shows, said with every call (`x-console-organization`). The page learns
 * it once, but the browser's cookie may stand for another organization's session by the time of a
 * call (another tab signed in, or another host of the site replaced the cookie): the API then
 * refuses the call (401) instead of acting for an organization the page does not show.
 */
let shownOrganization: string | undefined;

export function showOrganization(orgId: string | undefined): void {
  shownOrganization = orgId;
}

async function messageOf(response: Response): Promise<string> {
  try {
    const body = (await response.json()) as { message?: unknown };
    if (typeof body.message === "string") return body.message;
  } catch {
    // Not JSON: fall through to the status line.
  }
  return `${response.status} ${response.statusText || "error"}`;
}

export async function request<T>(
  method: "GET" | "POST" | "PUT" | "DELETE",
  path: string,
  body?: unknown,
  options: { quietUnauthorized?: boolean } = {},
): Promise<ApiAnswer<T>> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (shownOrganization !== undefined) headers["x-console-organization"] = shownOrganization;
  const init: RequestInit = { method, credentials: "same-origin", headers };
  if (body !== undefined) {
    headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response: Response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new ApiError(0, "The server could not be reached");
  }
  if (!response.ok) {
    const message = await messageOf(response);
    if (response.status === 401 && !options.quietUnauthorized) {
      for (const listener of signedOutListeners) listener(message);
    }
    throw new ApiError(response.status, message);
  }
  const text = response.status === 204 ? "" : await response.text();
  return { body: (text ? JSON.parse(text) : undefined) as T, headers: response.headers };
}

export const get = async <T>(path: string, query?: Query) => (await request<T>("GET", withQuery(path, query))).body;
export const post = async <T>(path: string, body?: unknown) => (await request<T>("POST", path, body ?? {})).body;
export const put = async <T>(path: string, body: unknown) => (await request<T>("PUT", path, body)).body;

/** A failure's sentence for the page. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
