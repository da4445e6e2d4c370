#!/usr/bin/env node
// kubewasm-js build app.js -o plugin.wasm: the plugin module, what it imports and the
// text files it reads, bundled into one script and built with a JavaScript engine into
// one component of the contract's `plugin` world.
//
// Engines, both through `jco componentize`: `quickjs` (the default: jco's QuickJS backend,
// componentize-qjs; a component of about 2 MB) or `starlingmonkey` (jco's default engine,
// componentize-js: about 12 MB, with `fetch` over wasi:http, which the host serves within
// the operator's grant, as it does the SDK's `http.fetch`).

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, extname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { SDK_SOURCES, sourceMapLine } from '../src/sourcemap.js';
import { TEXT_EXTENSIONS } from '../src/text-extensions.js';

const SDK = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const WIT = join(SDK, 'wit');
const WORLD = 'plugin';
const ENGINES = ['quickjs', 'starlingmonkey'];
const require = createRequire(import.meta.url);

const USAGE = `usage: kubewasm-js build APP.(js|ts) [-o OUT.wasm] [--engine ${ENGINES.join('|')}]
       kubewasm-js wit          print the directory of the contract's WIT files`;

function fail(message) {
  process.stderr.write(`kubewasm-js: ${message}\n`);
  process.exit(1);
}

/** The wrapper the bundle starts from: the host's log and HTTP, the engine's u64s, then
 * the app's plugin. */
function entry(app, engine) {
  return [
    `import { log as hostLog } from 'kubewasm:reconciler/log@0.2.0';`,
    `import { useHostLog } from ${JSON.stringify(join(SDK, 'src/log.js'))};`,
    `import { componentExports, useBigIntU64 } from ${JSON.stringify(join(SDK, 'src/export.js'))};`,
    `import { send as hostHttp } from 'kubewasm:reconciler/http@0.2.0';`,
    `import { useTransport } from ${JSON.stringify(join(SDK, 'src/http.js'))};`,
    `import * as app from ${JSON.stringify(app)};`,
    `useHostLog(hostLog);`,
    `useTransport(hostHttp);`,
    engine === 'starlingmonkey' ? 'useBigIntU64();' : '',
    `export const { pluginInfo, reconciler, handler, admission } = componentExports(app);`,
    '',
  ].join('\n');
}

/** One ES module of the app, the SDK and what they import; TypeScript stripped, text
 * files inlined, the contract's imports left to the component; its source map appended,
 * so that an exception's stack names the plugin's files (src/sourcemap.js). */
async function bundle(app, engine, dir) {
  const { rolldown } = await import('rolldown');
  const entryPath = join(dir, 'entry.js');
  writeFileSync(entryPath, entry(app, engine));
  const text = {
    name: 'kubewasm-text',
    load(id) {
      if (TEXT_EXTENSIONS.some((ext) => id.endsWith(ext))) {
        return { code: `export default ${JSON.stringify(readFileSync(id, 'utf8'))};`, moduleType: 'js' };
      }
      return null;
    },
  };
  const build = await rolldown({
    input: entryPath,
    platform: 'neutral',
    external: [/^kubewasm:/, /^wasi:/],
    plugins: [text],
    onLog(level, log, handler) {
      // A module that cannot be found is an error, not an import left to the engine.
      if (log.code === 'UNRESOLVED_IMPORT') handler('error', log);
      else handler(level, log);
    },
  });
  const { output } = await build.generate({ dir, format: 'esm', codeSplitting: false, sourcemap: 'hidden' });
  await build.close();
  const [chunk] = output;
  const out = join(dir, 'bundle.js');
  writeFileSync(out, chunk.code.replace(/\n?$/, '\n') + sourceMapLine(ownSources(chunk.map, dir, app)));
  return out;
}

/** The bundle's map with each source named as a stack should show it: the plugin's files
 * relative to the module's directory (`app.ts`), the SDK's under `@kubewasm/sdk/`. */
function ownSources(map, dir, app) {
  const sources = map.sources.map((source) => {
    const path = resolve(dir, source);
    if (path === join(dir, 'entry.js')) return `${SDK_SOURCES}entry.js`;
    if (!relative(SDK, path).startsWith('..')) return SDK_SOURCES + relative(SDK, path);
    return relative(dirname(app), path);
  });
  return { sources, mappings: map.mappings };
}

function componentize(script, output, engine) {
  const jco = join(dirname(require.resolve('@bytecodealliance/jco')), 'jco.js');
  const flags =
    engine === 'quickjs'
      ? ['--backend', 'quickjs', '--backend-qjs-disable-async']
      : // jco's defaults; jco 1.35.0 needs its WIT parser given the filesystem (jco-preopens.js).
        [];
  const preopens = join(SDK, 'bin/jco-preopens.js');
  const args = ['--import', preopens, jco, 'componentize', script, '--wit', WIT, '--world-name', WORLD, ...flags, '--out', output];
  const run = spawnSync(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  if (run.status !== 0) fail(`jco componentize failed (exit ${run.status ?? run.signal})`);
}

async function build(args) {
  let app;
  let output;
  let engine = 'quickjs';
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '-o' || arg === '--output') output = args[++i];
    else if (arg === '--engine') engine = args[++i];
    else if (arg.startsWith('-')) fail(`unknown option ${arg}\n${USAGE}`);
    else if (app === undefined) app = arg;
    else fail(`one plugin module at a time (got ${app} and ${arg})\n${USAGE}`);
  }
  if (app === undefined) fail(USAGE);
  if (!ENGINES.includes(engine)) fail(`--engine ${engine}: use one of ${ENGINES.join(', ')}`);
  app = resolve(app);
  if (!['.js', '.mjs', '.ts', '.mts'].includes(extname(app)) || !isFile(app)) {
    fail(`${app}: not a JavaScript or TypeScript file; give the plugin module, e.g. app.js`);
  }
  output = resolve(output ?? join(dirname(app), `${basename(app, extname(app))}.wasm`));
  const dir = mkdtempSync(join(tmpdir(), 'kubewasm-js-'));
  try {
    const script = await bundle(app, engine, dir);
    componentize(script, output, engine);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  process.stderr.write(`built ${output}\n`);
}

function isFile(path) {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

const [command, ...rest] = process.argv.slice(2);
if (command === 'build') await build(rest);
else if (command === 'wit') process.stdout.write(`${WIT}\n`);
else fail(USAGE);
