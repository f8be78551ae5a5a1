import { Link } from "../../router.tsx";
import { flowsPageOf } from "./flow-calls.ts";

/** A record's flow as a detail row: its key, linking to the Flows page with the flow picked out; nothing without one. */
export function FlowDetail({ flowKey }: { flowKey: string | null | undefined }) {
  if (!flowKey) return null;
  return (
    <div>
      <dt>Flow</dt>
      <dd>
        <Link to={flowsPageOf(flowKey)} className="mono">
          {flowKey}
        </Link>
      </dd>
    </div>
  );
}
