// Structured logging into the host's logs, where each line carries the plugin and the
// parent: `log.info('scaled', { replicas: 3 })`.
//
// In the component the lines go through the contract's `log` import (the host keeps at
// most 1000 lines a call). In native tests they go to stderr and are kept in
// `Outcome.logs`.

/** @type {(level: string, message: string, fields: [string, string][]) => void} */
let sink = (level, message, fields) => {
  const text = fields.map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(' ');
  process.stderr.write(`[${level.toUpperCase()}] ${message}${text ? ` ${text}` : ''}\n`);
  captured.push({ level, message, fields });
};

/** Lines logged natively since the last `takeCaptured()`. */
const captured = [];

/** Routes log lines to `witLog`, the contract's import (the build's entry does this). */
export function useHostLog(witLog) {
  sink = witLog;
}

export function takeCaptured() {
  return captured.splice(0, captured.length);
}

/** Logs `message` at `level` (`trace`, `debug`, `info`, `warn`, `error`) with key/value
 * `fields` (values are written with `String`). */
export function log(level, message, fields = {}) {
  sink(level, String(message), Object.entries(fields).map(([k, v]) => [k, String(v)]));
}

export const trace = (message, fields) => log('trace', message, fields);
export const debug = (message, fields) => log('debug', message, fields);
export const info = (message, fields) => log('info', message, fields);
export const warn = (message, fields) => log('warn', message, fields);
export const error = (message, fields) => log('error', message, fields);
