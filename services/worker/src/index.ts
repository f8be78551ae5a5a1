export { createWorker, type DeliveryWorker, type WorkerDeps } from "./worker.ts";
