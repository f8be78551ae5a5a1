import { getStatsRoute } from "./get-stats.ts";

/** Where the statistics are mounted, behind the API key check. */
export const STATS_PATH = "/api/stats";

/** The statistics of the console's overview. */
export const statsRoutes = [getStatsRoute];
