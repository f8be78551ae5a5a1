import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// The console is served by the API at /console (services/api/src/console/console-routes.ts) under a
// strict Content-Security-Policy: every script and style is a file of this build, none inline.
export default defineConfig({
  base: "/console/",
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // No source maps in the served build: the sources are in the repository.
    sourcemap: false,
    // Modern browsers only: no module-preload polyfill (it would be one more script to allow).
    modulePreload: { polyfill: false },
    target: "es2022",
  },
  server: {
    // `pnpm --filter @punctual/console dev` against a local API (pnpm dev) on its default port.
    proxy: { "/api": "http://127.0.0.1:3000", "/console/api": "http://127.0.0.1:3000" },
  },
});
