export { createWorker, type DeliveryWorker, type RunningWorker, startWorker, type WorkerDeps } from "./worker.ts";
