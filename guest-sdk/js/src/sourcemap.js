// Stack traces in the plugin's own files: the build (`kubewasm-js build`) appends the
// bundle's source map to the bundle, and an exception that traps the call has each
// `bundle.js:LINE:COLUMN` of its stack replaced by the source's (`app.ts:17:10`), which no
// engine in the sandbox does by itself.

const MAP = Symbol.for('kubewasm.sourcemap');

/** Where the build names the SDK's own sources in the map: not the author's code. */
export const SDK_SOURCES = '@kubewasm/sdk/';

/** The line the build appends to the bundle: `map` (`sources` and `mappings`) for the
 * stacks of this module. Appended, it moves no line of the bundle. */
export function sourceMapLine(map) {
  return `globalThis[Symbol.for('kubewasm.sourcemap')] = ${JSON.stringify({ map })};\n`;
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** The map's `mappings` decoded: per generated line, its segments `[column, source, line,
 * column]`, in order (all 0-based). */
function decode(mappings) {
  const lines = [];
  let source = 0;
  let line = 0;
  let column = 0;
  for (const text of mappings.split(';')) {
    const segments = [];
    let generated = 0;
    for (const segment of text.split(',')) {
      if (segment === '') continue;
      const values = [];
      let value = 0;
      let shift = 0;
      for (const char of segment) {
        const digit = BASE64.indexOf(char);
        value += (digit & 31) << shift;
        if (digit & 32) {
          shift += 5;
        } else {
          values.push(value & 1 ? -(value >>> 1) : value >>> 1);
          value = 0;
          shift = 0;
        }
      }
      generated += values[0];
      if (values.length >= 4) {
        source += values[1];
        line += values[2];
        column += values[3];
        segments.push([generated, source, line, column]);
      }
    }
    lines.push(segments);
  }
  return lines;
}

/** Whether this module runs as a bundle the build appended its map to (not under node). */
export function hasSourceMap() {
  return globalThis[MAP] !== undefined;
}

/** The source position of the bundle's `line` and `column` (1-based, as stacks give
 * them), or undefined where the map has none. */
export function originalPosition(line, column) {
  const state = globalThis[MAP];
  if (state === undefined) return undefined;
  state.lines ??= decode(state.map.mappings);
  const segments = state.lines[line - 1] ?? [];
  let found;
  for (const segment of segments) {
    if (segment[0] > Math.max(0, column - 1)) break;
    found = segment;
  }
  found ??= segments[0];
  if (found === undefined) return undefined;
  return { source: state.map.sources[found[1]], line: found[2] + 1, column: found[3] + 1 };
}

/** `stack` with each position in the bundle replaced by its source's. */
export function mapStack(stack) {
  return String(stack).replace(/[^\s()@]*bundle\.js:(\d+)(?::(\d+))?/g, (whole, line, column) => {
    const at = originalPosition(Number(line), Number(column ?? 1));
    return at === undefined ? whole : `${at.source}:${at.line}:${at.column}`;
  });
}

/** The first position of `stack` (mapped) in the author's code, not the SDK's: `app.ts:17:10`. */
export function authorsFrame(stack) {
  // A frame's position: QuickJS's `at f (POSITION)`, SpiderMonkey's `f@POSITION`.
  const positions = String(stack)
    .split('\n')
    .map((line) => (line.match(/\(([^()]+:\d+:\d+)\)\s*$/) ?? line.match(/@(.+:\d+:\d+)\s*$/))?.[1])
    .filter((p) => p !== undefined);
  return positions.find((p) => !p.startsWith(SDK_SOURCES) && !p.includes('node_modules/') && !p.includes('bundle.js:'));
}
