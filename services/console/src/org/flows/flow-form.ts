import type { Flow, SetFlowRequest } from "../../api/types.ts";
import { PERIOD_UNITS } from "./describe-flow.ts";

// A flow's limits as its form edits them: numbers typed as text and read on submit, the period as a
// count of a unit (5 per 2 seconds). The ranges are the API's to check; the form only reads numbers.

/** What a flow key may be (contract §10.2): 1–64 characters of A-Z a-z 0-9 . _ : - */
export const FLOW_KEY_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;

/** The period units the form offers: seconds to days, and milliseconds for a period that is no whole number of seconds. */
export const FORM_UNITS: readonly { ms: number; label: string }[] = [
  ...[...PERIOD_UNITS].reverse().map(({ ms, many }) => ({ ms, label: many })),
  { ms: 1, label: "milliseconds" },
];

export interface FlowForm {
  flowKey: string;
  /** Attempts that may start in each period; "" is no rate limit. */
  rate: string;
  /** The period's length, a count of `unitMs`. */
  period: string;
  unitMs: number;
  /** Attempts that may be in flight at once; "" is no limit. */
  parallelism: string;
}

export const NEW_FLOW_FORM: FlowForm = { flowKey: "", rate: "", period: "1", unitMs: 1_000, parallelism: "" };

/** The form of a flow as it is; a new flow's form is `NEW_FLOW_FORM` (with a key, for one not yet limited). */
export function flowFormOf(flow: Pick<Flow, "flowKey" | "rate" | "periodMs" | "parallelism">): FlowForm {
  // The largest unit the period is a whole number of (every period is a whole number of milliseconds).
  const unit = [...FORM_UNITS].sort((a, b) => b.ms - a.ms).find(({ ms }) => flow.periodMs % ms === 0) ?? { ms: 1 };
  return {
    flowKey: flow.flowKey,
    rate: flow.rate === null ? "" : String(flow.rate),
    period: String(flow.periodMs / unit.ms),
    unitMs: unit.ms,
    parallelism: flow.parallelism === null ? "" : String(flow.parallelism),
  };
}

class FormProblem extends Error {}

/** A whole number typed in a field; "" is null (no limit). */
function count(value: string, field: string): number | null {
  const trimmed = value.trim();
  if (trimmed === "") return null;
  if (!/^\d+$/.test(trimmed)) throw new FormProblem(`${field} must be a whole number`);
  return Number(trimmed);
}

/**
 * The PUT of a flow's form: every limit said (null where the field is empty: no limit), or the
 * sentence of what is wrong with the form.
 */
export function flowRequestOfForm(form: FlowForm): { flowKey: string; body: SetFlowRequest } | { problem: string } {
  const flowKey = form.flowKey.trim();
  if (!FLOW_KEY_PATTERN.test(flowKey)) {
    return { problem: "A flow key is 1 to 64 characters of A-Z, a-z, 0-9 and . _ : -" };
  }
  try {
    const rate = count(form.rate, "The rate");
    const parallelism = count(form.parallelism, "The parallelism");
    const period = count(form.period, "The period");
    const body: SetFlowRequest = { rate, parallelism };
    if (period !== null) body.periodMs = period * form.unitMs;
    else if (rate !== null) throw new FormProblem("A rate needs its period");
    return { flowKey, body };
  } catch (failure) {
    if (failure instanceof FormProblem) return { problem: failure.message };
    throw failure;
  }
}
