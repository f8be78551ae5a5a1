import { readFileSync } from "node:fs";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { repositoryRoot } from "./processes.ts";

// The compose files read as data, for checks that tie them to the files they mount and the
// settings the tests run with (CI has no Docker engine to run them).

export interface ComposeService {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  ports?: unknown;
  volumes?: string[];
  depends_on?: unknown;
}

/** `!reset` (Compose's tag that empties a list of the file below) reads as the string "reset". */
const customTags = [{ tag: "!reset", collection: "seq" as const, resolve: () => "reset" }];

/** The services of a compose file of the repository (`docker-compose.tls.yml`, …). */
export function composeServices(file: string): Record<string, ComposeService> {
  const parsed = parseYaml(readFileSync(path.join(repositoryRoot, file), "utf8"), { customTags }) as {
    services: Record<string, ComposeService>;
  };
  return parsed.services;
}

/** A bind mount's source, resolved in the repository, and its target (`./a:/b:ro`). */
export function bindMounts(service: ComposeService): { source: string; target: string }[] {
  return (service.volumes ?? [])
    .filter((volume) => volume.startsWith("./"))
    .map((volume) => {
      const [source = "", target = ""] = volume.split(":");
      return { source: path.join(repositoryRoot, source), target };
    });
}
