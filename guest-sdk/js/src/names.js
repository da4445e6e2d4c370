// Kubernetes name rules and Rust's `{:?}` quoting, shared by the manifest check and the
// response check so that their messages are the host's, word for word.

/** Bytes of `s` in UTF-8 (QuickJS has no TextEncoder). */
export function byteLength(s) {
  let n = 0;
  for (const c of s) {
    const code = c.codePointAt(0);
    n += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
  }
  return n;
}

/** Orders strings by their UTF-8 bytes (code points), as Rust orders `String`s. */
export function compareUtf8(a, b) {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i].codePointAt(0) - y[i].codePointAt(0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

const isLowerDigitOrDash = (c) => (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c === '-';
const isAlnum = (c) => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');

export function isDnsLabel(s) {
  const n = byteLength(s);
  return n > 0 && n <= 63 && [...s].every(isLowerDigitOrDash) && !s.startsWith('-') && !s.endsWith('-');
}

export function isDnsSubdomain(s) {
  const n = byteLength(s);
  return n > 0 && n <= 253 && s.split('.').every(isDnsLabel);
}

/** `[prefix/]name`, as label and annotation keys. */
export function isQualifiedName(key) {
  const slash = key.lastIndexOf('/');
  const prefix = slash < 0 ? '' : key.slice(0, slash);
  const name = key.slice(slash + 1);
  const n = byteLength(name);
  return (
    (prefix === '' || isDnsSubdomain(prefix)) &&
    n > 0 &&
    n <= 63 &&
    [...name].every((c) => isAlnum(c) || c === '-' || c === '_' || c === '.') &&
    isAlnum(name[0]) &&
    isAlnum(name[name.length - 1])
  );
}

export function isLabelValue(v) {
  return v === '' || (isQualifiedName(v) && !v.includes('/'));
}

const ESCAPES = { '\t': '\\t', '\r': '\\r', '\n': '\\n', '\\': '\\\\', '"': '\\"', '\0': '\\0' };

/** `s` quoted as Rust's `{:?}` prints a string (for the characters plugins use: printable
 * text is kept, quotes, backslashes and control characters are escaped). */
export function debug(s) {
  let out = '';
  for (const c of s) {
    const code = c.codePointAt(0);
    if (c in ESCAPES) out += ESCAPES[c];
    else if (code < 0x20 || (code >= 0x7f && code < 0xa0)) out += `\\u{${code.toString(16)}}`;
    else out += c;
  }
  return `"${out}"`;
}

/** What `value` is, for a message: its class, `null`, or its `typeof`. */
export function typeName(value) {
  if (value === null) return 'null';
  if (typeof value === 'object') return value.constructor?.name ?? 'an object';
  return typeof value;
}
