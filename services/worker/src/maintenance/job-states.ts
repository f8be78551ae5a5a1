import type { Redis } from "@punctual/core";
import type { Queue } from "bullmq";

export type JobState = "live" | "finished" | "missing";

/**
 * The state of many jobs in one pipelined round trip: live (waiting, delayed or active, so it will
 * run), finished (completed or failed: it will not run again) or missing (Redis lost it).
 */
export async function jobStates(redis: Redis, queue: Queue, jobIds: string[]): Promise<Map<string, JobState>> {
  const pipeline = redis.pipeline();
  for (const id of jobIds) pipeline.hmget(queue.toKey(id), "timestamp", "finishedOn");
  const replies = (await pipeline.exec()) ?? [];
  return new Map(
    jobIds.map((id, n) => {
      const [error, fields] = replies[n] ?? [null, null];
      if (error) throw error;
      const [timestamp, finishedOn] = (fields as (string | null)[] | null) ?? [null, null];
      const state: JobState = timestamp === null ? "missing" : finishedOn === null ? "live" : "finished";
      return [id, state];
    }),
  );
}
