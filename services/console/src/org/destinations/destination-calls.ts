import { get, post } from "../../api/client.ts";
import type { Destination } from "../../api/types.ts";

// The calls of the Destinations page (contract §10.3), with the console's session.

export const listDestinations = () => get<Destination[]>("/api/destinations");

/** Makes an Unhealthy origin Healthy at once; the answer is its record as it is now. */
export const resetDestination = (origin: string) => post<Destination>("/api/destinations/reset", { origin });
