// Cron schedules exactly as the Kubebuilder tutorial reads them: robfig/cron v1.2.0's
// `ParseStandard` and `Schedule.Next`, with its error messages word for word (the same
// port as plugins/cronjob's `cron` module). Times are UTC.

/** Set on a field written `*` or `?`: what switches day matching to "both". */
const STAR = 1n << 63n;

interface Bounds {
  min: number;
  max: number;
  names: Record<string, number>;
}

const MINUTES: Bounds = { min: 0, max: 59, names: {} };
const HOURS: Bounds = { min: 0, max: 23, names: {} };
const DOM: Bounds = { min: 1, max: 31, names: {} };
const MONTHS: Bounds = {
  min: 1,
  max: 12,
  names: { jan: 1, feb: 2, mar: 3, apr: 4, may: 5, jun: 6, jul: 7, aug: 8, sep: 9, oct: 10, nov: 11, dec: 12 },
};
const DOW: Bounds = { min: 0, max: 6, names: { sun: 0, mon: 1, tue: 2, wed: 3, thu: 4, fri: 5, sat: 6 } };

/** When a schedule runs: five fields, one bit per allowed value, or every so many seconds. */
export type Schedule = { minute: bigint; hour: bigint; dom: bigint; month: bigint; dow: bigint } | { everySeconds: number };

/** A schedule robfig/cron refuses; the message is its own. */
export class CronError extends Error {}

/** Parses `spec` as robfig/cron v1.2.0's `ParseStandard` does; throws a `CronError`. */
export function parse(spec: string): Schedule {
  if (spec === '') throw new CronError('Empty spec string');
  if (spec.startsWith('@')) return descriptor(spec);
  const fields = spec.split(/\s+/).filter((f) => f !== '');
  if (fields.length !== 5) throw new CronError(`Expected exactly 5 fields, found ${fields.length}: ${spec}`);
  return {
    minute: field(fields[0], MINUTES),
    hour: field(fields[1], HOURS),
    dom: field(fields[2], DOM),
    month: field(fields[3], MONTHS),
    dow: field(fields[4], DOW),
  };
}

const all = (b: Bounds) => bits(b.min, b.max, 1) | STAR;
const first = (b: Bounds) => 1n << BigInt(b.min);

function descriptor(spec: string): Schedule {
  const at = (minute: bigint, hour: bigint, dom: bigint, month: bigint, dow: bigint) => ({ minute, hour, dom, month, dow });
  switch (spec) {
    case '@yearly':
    case '@annually':
      return at(first(MINUTES), first(HOURS), first(DOM), first(MONTHS), all(DOW));
    case '@monthly':
      return at(first(MINUTES), first(HOURS), first(DOM), all(MONTHS), all(DOW));
    case '@weekly':
      return at(first(MINUTES), first(HOURS), all(DOM), all(MONTHS), first(DOW));
    case '@daily':
    case '@midnight':
      return at(first(MINUTES), first(HOURS), all(DOM), all(MONTHS), all(DOW));
    case '@hourly':
      return at(first(MINUTES), all(HOURS), all(DOM), all(MONTHS), all(DOW));
  }
  if (!spec.startsWith('@every ')) throw new CronError(`Unrecognized descriptor: ${spec}`);
  let nanos: number;
  try {
    nanos = goDuration(spec.slice('@every '.length));
  } catch (e) {
    throw new CronError(`Failed to parse duration ${spec}: ${(e as Error).message}`);
  }
  // Every(): at least a second, rounded down to whole seconds.
  return { everySeconds: Math.max(1, Math.floor(nanos / 1e9)) };
}

/** Go's `time.ParseDuration`, in nanoseconds (its error text too). */
function goDuration(text: string): number {
  const quoted = JSON.stringify(text);
  const invalid = () => new Error(`time: invalid duration ${quoted}`);
  let rest = text;
  let negative = false;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    negative = rest.startsWith('-');
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') throw invalid();
  const scales: Record<string, number> = { ns: 1, us: 1e3, 'µs': 1e3, 'μs': 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };
  let total = 0;
  while (rest !== '') {
    const number = /^[0-9.]*/.exec(rest)![0];
    if (number === '' || number === '.' || number.split('.').length > 2) throw invalid();
    rest = rest.slice(number.length);
    const unit = /^[^0-9.]*/.exec(rest)![0];
    rest = rest.slice(unit.length);
    if (unit === '') throw new Error(`time: missing unit in duration ${quoted}`);
    const scale = scales[unit];
    if (scale === undefined) throw new Error(`time: unknown unit ${JSON.stringify(unit)} in duration ${quoted}`);
    total += Number(number) * scale;
  }
  if (total > 9.223372036854776e18) throw invalid();
  return negative ? -total : total;
}

function field(text: string, bounds: Bounds): bigint {
  // strings.FieldsFunc: empty items between commas are skipped.
  return text
    .split(',')
    .filter((r) => r !== '')
    .reduce((acc, expr) => acc | range(expr, bounds), 0n);
}

function range(expr: string, bounds: Bounds): bigint {
  const rangeAndStep = expr.split('/');
  const lowAndHigh = rangeAndStep[0].split('-');
  const single = lowAndHigh.length === 1;
  let start: number;
  let end: number;
  let extra = 0n;
  if (lowAndHigh[0] === '*' || lowAndHigh[0] === '?') {
    [start, end, extra] = [bounds.min, bounds.max, STAR];
  } else {
    start = intOrName(lowAndHigh[0], bounds);
    if (lowAndHigh.length === 1) end = start;
    else if (lowAndHigh.length === 2) end = intOrName(lowAndHigh[1], bounds);
    else throw new CronError(`Too many hyphens: ${expr}`);
  }
  let step = 1;
  if (rangeAndStep.length === 2) {
    step = int(rangeAndStep[1]);
    if (single) end = bounds.max;
  } else if (rangeAndStep.length > 2) {
    throw new CronError(`Too many slashes: ${expr}`);
  }
  if (start < bounds.min) throw new CronError(`Beginning of range (${start}) below minimum (${bounds.min}): ${expr}`);
  if (end > bounds.max) throw new CronError(`End of range (${end}) above maximum (${bounds.max}): ${expr}`);
  if (start > end) throw new CronError(`Beginning of range (${start}) beyond end of range (${end}): ${expr}`);
  if (step === 0) throw new CronError(`Step of range should be a positive number: ${expr}`);
  return bits(start, end, step) | extra;
}

function bits(start: number, end: number, step: number): bigint {
  let out = 0n;
  for (let n = start; n <= end; n += step) out |= 1n << BigInt(n);
  return out;
}

function intOrName(expr: string, bounds: Bounds): number {
  return bounds.names[expr.toLowerCase()] ?? int(expr);
}

/** robfig's `mustParseInt`: Go's `strconv.Atoi`, then no negatives. */
function int(expr: string): number {
  const quoted = JSON.stringify(expr);
  if (!/^[+-]?[0-9]+$/.test(expr)) {
    throw new CronError(`Failed to parse int from ${expr}: strconv.Atoi: parsing ${quoted}: invalid syntax`);
  }
  const number = BigInt(expr);
  if (number > 9223372036854775807n || number < -9223372036854775808n) {
    throw new CronError(`Failed to parse int from ${expr}: strconv.Atoi: parsing ${quoted}: value out of range`);
  }
  if (number < 0n) throw new CronError(`Negative number (${number}) not allowed: ${expr}`);
  // Above any field's maximum, so the range check words it.
  return number > 4294967295n ? 4294967295 : Number(number);
}

const has = (set: bigint, n: number) => (set & (1n << BigInt(n))) !== 0n;

/** The first run strictly after `after`, or `undefined` when there is none within five
 * years (a schedule such as `0 0 30 2 *`). */
export function next(schedule: Schedule, after: Date): Date | undefined {
  const wholeSecond = Math.floor(after.getTime() / 1000) * 1000;
  if ('everySeconds' in schedule) return new Date(wholeSecond + schedule.everySeconds * 1000);
  const { minute, hour, dom, month, dow } = schedule;
  // The upcoming whole second; the arithmetic is Go's time.AddDate in UTC.
  const t = new Date(wholeSecond + 1000);
  const yearLimit = t.getUTCFullYear() + 5;
  const dayMatches = () => {
    const domMatch = has(dom, t.getUTCDate());
    const dowMatch = has(dow, t.getUTCDay());
    return (dom & STAR) !== 0n || (dow & STAR) !== 0n ? domMatch && dowMatch : domMatch || dowMatch;
  };
  let added = false;
  wrap: for (;;) {
    if (t.getUTCFullYear() > yearLimit) return undefined;
    while (!has(month, t.getUTCMonth() + 1)) {
      if (!added) {
        added = true;
        t.setUTCDate(1);
        t.setUTCHours(0, 0, 0, 0);
      }
      t.setUTCMonth(t.getUTCMonth() + 1);
      if (t.getUTCMonth() === 0) continue wrap;
    }
    while (!dayMatches()) {
      if (!added) {
        added = true;
        t.setUTCHours(0, 0, 0, 0);
      }
      t.setUTCDate(t.getUTCDate() + 1);
      if (t.getUTCDate() === 1) continue wrap;
    }
    while (!has(hour, t.getUTCHours())) {
      if (!added) {
        added = true;
        t.setUTCMinutes(0, 0, 0);
      }
      t.setUTCHours(t.getUTCHours() + 1);
      if (t.getUTCHours() === 0) continue wrap;
    }
    while (!has(minute, t.getUTCMinutes())) {
      if (!added) {
        added = true;
        t.setUTCSeconds(0, 0);
      }
      t.setUTCMinutes(t.getUTCMinutes() + 1);
      if (t.getUTCMinutes() === 0) continue wrap;
    }
    // The seconds field is always "0"; the start is a whole second, so this adds at most
    // up to the next minute.
    while (t.getUTCSeconds() !== 0) {
      if (!added) {
        added = true;
        t.setUTCMilliseconds(0);
      }
      t.setUTCSeconds(t.getUTCSeconds() + 1);
      if (t.getUTCSeconds() === 0) continue wrap;
    }
    return t;
  }
}

/** `t` in RFC 3339 to the second, as Kubernetes writes times: `2026-01-01T10:00:00Z`. */
export function rfc3339(t: Date): string {
  return t.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
