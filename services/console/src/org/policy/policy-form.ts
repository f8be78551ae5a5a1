import type { BodyMode, DeliveryMethod, DeliveryPolicy } from "../../api/types.ts";
import { type HeaderRow, headerRowsOf, headersOf } from "./header-rows.ts";

// The organization's default policy as its form edits it: every field may be left to the deployment's
// default (left out of the PUT), numbers are typed as text and read on submit.

export type RetryForm = "default" | "fixed" | "exponential";

/** How a delivery is sent: what a test delivery takes too. */
export interface SendingForm {
  method: DeliveryMethod | "";
  body: BodyMode | "";
  timeoutMs: string;
  headers: HeaderRow[];
}

export const EMPTY_SENDING_FORM: SendingForm = { method: "", body: "", timeoutMs: "", headers: [] };

export interface PolicyForm extends SendingForm {
  retry: RetryForm;
  /** Milliseconds, separated by commas or spaces. */
  delaysMs: string;
  attempts: string;
  initialDelayMs: string;
  maxDelayMs: string;
  jitter: boolean;
  maxAgeMs: string;
  /** Status codes, separated by commas or spaces. */
  stopOnStatus: string;
}

const list = (numbers: readonly number[] | undefined) => (numbers ?? []).join(", ");
const text = (n: number | undefined) => (n === undefined ? "" : String(n));

export function policyFormOf(policy: DeliveryPolicy): PolicyForm {
  const retry = policy.retry;
  const exponential = retry && "attempts" in retry ? retry : undefined;
  return {
    method: policy.method ?? "",
    body: policy.body ?? "",
    timeoutMs: text(policy.timeoutMs),
    headers: headerRowsOf(policy.headers),
    retry: retry === undefined ? "default" : exponential ? "exponential" : "fixed",
    delaysMs: retry && "delaysMs" in retry ? list(retry.delaysMs) : "",
    attempts: text(exponential?.attempts),
    initialDelayMs: text(exponential?.initialDelayMs),
    maxDelayMs: text(exponential?.maxDelayMs),
    jitter: exponential?.jitter ?? false,
    maxAgeMs: text(retry?.maxAgeMs),
    stopOnStatus: list(retry?.stopOnStatus),
  };
}

class FormProblem extends Error {}

/** A whole number typed in a field; "" is none. The ranges are the API's to check and say. */
function integer(value: string, field: string): number | undefined {
  const trimmed = value.trim();
  if (trimmed === "") return undefined;
  if (!/^-?\d+$/.test(trimmed)) throw new FormProblem(`${field} must be a whole number`);
  return Number(trimmed);
}

function integers(value: string, field: string): number[] {
  return value
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((part) => integer(part, field) as number);
}

function required(value: string, field: string): number {
  const n = integer(value, field);
  if (n === undefined) throw new FormProblem(`${field} is required for an exponential schedule`);
  return n;
}

function retryOf(form: PolicyForm): DeliveryPolicy["retry"] {
  if (form.retry === "default") return undefined;
  const maxAgeMs = integer(form.maxAgeMs, "Deadline");
  const stopOnStatus = integers(form.stopOnStatus, "Each status to stop on");
  const limits = {
    ...(maxAgeMs === undefined ? {} : { maxAgeMs }),
    ...(stopOnStatus.length === 0 ? {} : { stopOnStatus }),
  };
  if (form.retry === "fixed") return { delaysMs: integers(form.delaysMs, "Each delay"), ...limits };
  return {
    attempts: required(form.attempts, "Number of retries"),
    backoff: "exponential",
    initialDelayMs: required(form.initialDelayMs, "First delay"),
    maxDelayMs: required(form.maxDelayMs, "Longest delay"),
    jitter: form.jitter,
    ...limits,
  };
}

type Outcome<T> = T | { problem: string };

function problemOf<T>(read: () => T): Outcome<T> {
  try {
    return read();
  } catch (failure) {
    if (failure instanceof FormProblem) return { problem: failure.message };
    throw failure;
  }
}

type SendingFields = Pick<DeliveryPolicy, "method" | "body" | "timeoutMs" | "headers">;

/** The sending fields the form sets (none when left to the defaults), or the first problem found. */
export function sendingFieldsOf(form: SendingForm): Outcome<{ fields: SendingFields }> {
  const headers = headersOf(form.headers);
  if ("problem" in headers) return headers;
  return problemOf(() => {
    const timeoutMs = integer(form.timeoutMs, "Timeout");
    const fields: SendingFields = {
      ...(form.method === "" ? {} : { method: form.method }),
      ...(form.body === "" ? {} : { body: form.body }),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      ...(headers.headers === undefined ? {} : { headers: headers.headers }),
    };
    return { fields };
  });
}

/** The PUT body of the form: only the fields it sets (`{}` when none), or the first problem found. */
export function policyOfForm(form: PolicyForm): Outcome<{ policy: DeliveryPolicy }> {
  const sending = sendingFieldsOf(form);
  if ("problem" in sending) return sending;
  return problemOf(() => {
    const retry = retryOf(form);
    return { policy: { ...sending.fields, ...(retry === undefined ? {} : { retry }) } };
  });
}
