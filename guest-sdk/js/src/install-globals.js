// Defines, in a QuickJS component, the Web globals the engine lacks (globals.js) over the
// host's wasi:random. The build imports it first, so that they are there before the
// plugin's module runs. Only a component has this import: Node never loads this module.

import { getRandomBytes } from 'wasi:random/random@0.2.12';
import { useSandboxGlobals } from './globals.js';

useSandboxGlobals(getRandomBytes);
