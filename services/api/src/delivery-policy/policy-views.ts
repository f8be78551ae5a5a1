import {
  type CronJobView,
  type CronJobWithPolicy,
  effectivePolicyView,
  mergeWithDefault,
  type PolicyDefaults,
  type ResolvedDeliveryPolicy,
} from "@punctual/core";

/**
 * A cron job's effective policy (contract §10.1): its own fields over its organization's current
 * default (what its next run will take), filled with the deployment's defaults, redacted.
 */
export function cronJobPolicyView(job: CronJobWithPolicy, defaults: PolicyDefaults): ResolvedDeliveryPolicy {
  return effectivePolicyView(mergeWithDefault(job.deliveryPolicy, job.organizationPolicy), defaults);
}

/** A cron job's view with its effective policy. */
export function withCronJobPolicy<V extends CronJobView>(
  view: V,
  job: CronJobWithPolicy,
  defaults: PolicyDefaults,
): V & ResolvedDeliveryPolicy {
  return { ...view, ...cronJobPolicyView(job, defaults) };
}
