// An outcome is told by its word and a symbol, never by its color alone.

const KINDS: Record<string, { kind: string; symbol: string }> = {
  Sent: { kind: "ok", symbol: "✓" },
  Active: { kind: "ok", symbol: "●" },
  "Failed To Send": { kind: "bad", symbol: "✕" },
  "Failed To Queue": { kind: "bad", symbol: "✕" },
  Failed: { kind: "bad", symbol: "✕" },
  "Failed To Run": { kind: "bad", symbol: "✕" },
  Pending: { kind: "wait", symbol: "◷" },
  Queued: { kind: "wait", symbol: "◷" },
  Cancelled: { kind: "muted", symbol: "–" },
  Disabled: { kind: "muted", symbol: "‖" },
  Completed: { kind: "muted", symbol: "✓" },
  Skipped: { kind: "muted", symbol: "↷" },
  Revoked: { kind: "muted", symbol: "–" },
  Running: { kind: "ok", symbol: "●" },
  Paused: { kind: "wait", symbol: "‖" },
  Healthy: { kind: "ok", symbol: "✓" },
  Unhealthy: { kind: "bad", symbol: "✕" },
};

export function StatusBadge({ status }: { status: string }) {
  const { kind, symbol } = KINDS[status] ?? { kind: "muted", symbol: "•" };
  return (
    <span className={`badge badge-${kind}`}>
      <span aria-hidden="true">{symbol}</span> {status}
    </span>
  );
}
