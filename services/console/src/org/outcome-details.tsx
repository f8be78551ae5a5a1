import type { Labels } from "./labels.ts";

// A record's labels and callback URL as its page and the events list show them: what the form of
// outcome-fields.tsx sets, read back. Each shows nothing when the record has none.

/**
 * Labels as small `key:value` chips that wrap; a long one is cut short on screen (its title holds
 * it whole), so a row of the events list keeps its width on a phone.
 */
export function LabelTags({ labels }: { labels: Labels }) {
  const pairs = Object.entries(labels);
  if (pairs.length === 0) return null;
  return (
    <span className="label-tags">
      {pairs.map(([key, value]) => {
        const pair = `${key}:${value}`;
        return (
          <span key={key} className="tag mono" title={pair}>
            {pair}
          </span>
        );
      })}
    </span>
  );
}

/** A record's labels as a detail row. */
export function LabelsDetail({ labels }: { labels: Labels }) {
  if (Object.keys(labels).length === 0) return null;
  return (
    <div>
      <dt>Labels</dt>
      <dd>
        <LabelTags labels={labels} />
      </dd>
    </div>
  );
}

/** Where the final outcome of a record's deliveries is POSTed, as a detail row. */
export function CallbackUrlDetail({ callbackUrl }: { callbackUrl: string | null }) {
  if (!callbackUrl) return null;
  return (
    <div>
      <dt>Callback URL</dt>
      <dd className="url">{callbackUrl}</dd>
    </div>
  );
}
