import type { ReactNode } from "react";
import type { DeliveryPolicy } from "../../api/types.ts";
import {
  BODY_MODE_WORDS,
  describeMaxAge,
  describeRetries,
  describeStopOnStatus,
  formatSpan,
} from "./describe-policy.ts";
import { HeaderList } from "./policy-details.tsx";

/** The fields the organization's default sets; the others are the deployment's. */
export function DefaultPolicySummary({ policy }: { policy: DeliveryPolicy }) {
  const { retry } = policy;
  const rows: [string, ReactNode][] = [];
  if (policy.method) rows.push(["Method", policy.method]);
  if (policy.body) rows.push(["Body", BODY_MODE_WORDS[policy.body]]);
  if (policy.timeoutMs !== undefined) rows.push(["Timeout", `${formatSpan(policy.timeoutMs)} per attempt`]);
  if (retry) {
    rows.push(["Retries", describeRetries(retry)]);
    const maxAge = describeMaxAge(retry.maxAgeMs);
    if (maxAge) rows.push(["Deadline", maxAge]);
    const stopOn = describeStopOnStatus(retry.stopOnStatus);
    if (stopOn) rows.push(["Stop on status", stopOn]);
  }
  if (policy.headers) rows.push(["Headers", <HeaderList key="headers" headers={policy.headers} />]);
  if (rows.length === 0) {
    return <p>No default: events and cron runs without their own policy take the deployment's defaults.</p>;
  }
  return (
    <>
      <p>Events and cron runs created from now on take these fields when they set none of their own:</p>
      <dl className="details">
        {rows.map(([term, value]) => (
          <div key={term}>
            <dt>{term}</dt>
            <dd>{value}</dd>
          </div>
        ))}
      </dl>
    </>
  );
}
