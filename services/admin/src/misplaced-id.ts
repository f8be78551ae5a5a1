import type { FlagName } from "./flags.ts";

// The admin CLI handles three kinds of identifiers that look alike: organization ids (org_…), API
// key ids (key_…) and API keys themselves (pk_…). Passing one where another is expected is the
// likeliest mistake; it is named as such rather than as a value of the wrong format.

const KINDS: [prefix: string, what: string][] = [
  ["pk_", "the API key itself"],
  ["key_", "an API key id"],
  ["org_", "an organization id"],
  ["acc_", "an account id"],
];

const EXPECTED: Partial<Record<FlagName, { prefix: string; expects: string; findIds: string }>> = {
  key: { prefix: "key_", expects: "the key's id (key_…)", findIds: "key:list --org ORG_ID" },
  org: { prefix: "org_", expects: "the organization's id (org_…)", findIds: "org:list" },
};

/** A sentence when `value` is plainly another kind of identifier than `flag` takes. */
export function misplacedId(flag: FlagName, value: string): string | undefined {
  const expected = EXPECTED[flag];
  if (!expected || value.startsWith(expected.prefix)) return undefined;
  const kind = KINDS.find(([prefix]) => value.startsWith(prefix));
  if (!kind) return undefined;
  return `--${flag} expects ${expected.expects}, not ${kind[1]}; find ids with ${expected.findIds}`;
}
