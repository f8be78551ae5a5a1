import { useId } from "react";
import type { EffectiveDeliveryPolicy } from "../../api/types.ts";
import {
  BODY_MODE_WORDS,
  describeMaxAge,
  describeRetries,
  describeStopOnStatus,
  formatSpan,
  REDACTED,
  sendsNoBody,
} from "./describe-policy.ts";

/** Header names and values; a sensitive value is the API's "[redacted]", shown as it is. */
export function HeaderList({ headers }: { headers: Record<string, string> }) {
  const entries = Object.entries(headers);
  if (entries.length === 0) return <>none</>;
  return (
    <dl className="header-list">
      {entries.map(([name, value]) => (
        <div key={name}>
          <dt className="mono">{name}</dt>
          <dd className={value === REDACTED ? "mono redacted" : "mono"}>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

/** How a record's deliveries are sent and retried: the effective policy of an event or a cron job. */
export function PolicyDetails({ policy }: { policy: EffectiveDeliveryPolicy }) {
  const titleId = useId();
  const { retry } = policy;
  const maxAge = describeMaxAge(retry.maxAgeMs);
  const stopOn = describeStopOnStatus(retry.stopOnStatus);
  return (
    <section className="card" aria-labelledby={titleId}>
      <h2 id={titleId}>Delivery policy</h2>
      <dl className="details">
        <div>
          <dt>Method</dt>
          <dd>{policy.method}</dd>
        </div>
        <div>
          <dt>Body</dt>
          <dd>{sendsNoBody(policy.method) ? `none (${policy.method} sends no body)` : BODY_MODE_WORDS[policy.body]}</dd>
        </div>
        <div>
          <dt>Timeout</dt>
          <dd>{formatSpan(policy.timeoutMs)} per attempt</dd>
        </div>
        <div>
          <dt>Retries</dt>
          <dd>{describeRetries(retry)}</dd>
        </div>
        {maxAge && (
          <div>
            <dt>Deadline</dt>
            <dd>{maxAge}</dd>
          </div>
        )}
        {stopOn && (
          <div>
            <dt>Stop on status</dt>
            <dd>{stopOn}</dd>
          </div>
        )}
        <div>
          <dt>Headers</dt>
          <dd>
            <HeaderList headers={policy.headers} />
          </dd>
        </div>
      </dl>
    </section>
  );
}
