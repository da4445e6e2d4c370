// The stacks of a bundled plugin in its own sources: the map the build appends, decoded.

import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';

import { authorsFrame, hasSourceMap, mapStack, originalPosition, sourceMapLine } from '../src/sourcemap.js';

const MAP = Symbol.for('kubewasm.sourcemap');

// Bundle line 1 is app.ts line 1; bundle line 2 from column 5 is app.ts 5:3; bundle line 3
// is the SDK's export.js line 10.
const map = { sources: ['app.ts', '@kubewasm/sdk/src/export.js'], mappings: 'AAAA;IAIE;ACKF' };

afterEach(() => {
  delete globalThis[MAP];
});

test('the line the build appends sets the map, and moves no line', () => {
  const line = sourceMapLine(map);
  assert.equal(line.split('\n').length, 2, 'one line, ended');
  assert.equal(hasSourceMap(), false);
  new Function(line)();
  assert.equal(hasSourceMap(), true);
  assert.deepEqual(originalPosition(2, 7), { source: 'app.ts', line: 5, column: 3 });
});

test('a stack is mapped frame by frame, and the first frame of the plugin is found', () => {
  globalThis[MAP] = { map };
  const stack = '    at load (/bundle.js:3:1)\n    at sizeOf (/bundle.js:2:9)\n    at nowhere (/bundle.js:9:1)\n';
  const mapped = mapStack(stack);
  assert.equal(
    mapped,
    '    at load (@kubewasm/sdk/src/export.js:10:1)\n    at sizeOf (app.ts:5:3)\n    at nowhere (/bundle.js:9:1)\n',
    'a position the map lacks stays as it was',
  );
  assert.equal(authorsFrame(mapped), 'app.ts:5:3', "the SDK's frame is skipped");
  // SpiderMonkey's frames (StarlingMonkey): function@file:line:column.
  const spidermonkey = mapStack('load@bundle.js:3:1\nsizeOf@bundle.js:2:5\n');
  assert.equal(spidermonkey, 'load@@kubewasm/sdk/src/export.js:10:1\nsizeOf@app.ts:5:3\n');
  assert.equal(authorsFrame(spidermonkey), 'app.ts:5:3');
});
