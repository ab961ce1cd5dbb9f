// Bundles the console into ../campaign_engine/api/admin_static/ with content-hashed names and writes
// manifest.json (entry -> file) for campaign_engine/api/admin_console.py, which serves them.
import { build } from "esbuild";
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const outdir = join(here, "..", "campaign_engine", "api", "admin_static");

// Old hashed files would otherwise pile up; the folder holds nothing but build output.
mkdirSync(outdir, { recursive: true });
for (const name of readdirSync(outdir)) rmSync(join(outdir, name));

const common = {
  bundle: true,
  minify: true,
  sourcemap: false,
  target: "es2020",
  outdir,
  entryNames: "[name]-[hash]",
  metafile: true,
  logLevel: "warning",
  legalComments: "none",
};

const manifest = {};
function record(result) {
  for (const [file, out] of Object.entries(result.metafile.outputs)) {
    if (out.entryPoint) manifest[basename(out.entryPoint).replace(/\.ts$/, ".js")] = basename(file);
  }
}

// The console is a module; the email frame runs sandboxed with an opaque origin, so a classic script.
record(await build({ ...common, entryPoints: [join(here, "src/app.ts"), join(here, "src/app.css")], format: "esm" }));
record(await build({ ...common, entryPoints: [join(here, "src/frame.ts")], format: "iife" }));
writeFileSync(join(outdir, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n");
console.log(`admin console built: ${Object.values(manifest).join(", ")}`);
