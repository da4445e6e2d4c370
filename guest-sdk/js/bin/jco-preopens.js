// `node --import ./jco-preopens.js jco.js ...`: jco 1.35.0 runs the WIT parser under
// preview2-shim 0.26, which no longer opens the host's `/` by default, so `jco
// componentize` (StarlingMonkey) and `jco guest-types` fail with "failed to get path
// metadata". This opens `/` in the shim instance jco uses, as 0.25 did.

import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const jco = createRequire(require.resolve('@bytecodealliance/jco'));
const transpile = createRequire(jco.resolve('@bytecodealliance/jco-transpile'));
const shim = await import(pathToFileURL(transpile.resolve('@bytecodealliance/preview2-shim/filesystem')).href);
shim._addPreopen('/', '/');
