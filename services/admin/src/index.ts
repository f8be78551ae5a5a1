export { type CliIo, helpText, runCli } from "./cli.ts";
