export { type ApiDeps, createApp } from "./app.ts";
export { type RunningApi, startApi } from "./server.ts";
