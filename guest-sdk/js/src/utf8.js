// UTF-8 text to bytes and back, for HTTP bodies and the TextEncoder and TextDecoder
// QuickJS lacks (globals.js).

/** The UTF-8 bytes of `text`; a lone surrogate becomes U+FFFD, as TextEncoder does. */
export function encodeUtf8(text) {
  const out = [];
  for (const c of String(text)) {
    let code = c.codePointAt(0);
    if (code >= 0xd800 && code <= 0xdfff) code = 0xfffd;
    if (code < 0x80) out.push(code);
    else if (code < 0x800) out.push(0xc0 | (code >> 6), 0x80 | (code & 0x3f));
    else if (code < 0x10000) out.push(0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f));
    else out.push(0xf0 | (code >> 18), 0x80 | ((code >> 12) & 0x3f), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f));
  }
  return new Uint8Array(out);
}

/** The text of UTF-8 `bytes`; malformed sequences become U+FFFD exactly as TextDecoder
 * replaces them (the WHATWG Encoding standard's UTF-8 decoder), or with `fatal` throw a
 * TypeError as TextDecoder's fatal mode does. */
export function decodeUtf8(bytes, { fatal = false } = {}) {
  const { text, held } = decodeUtf8Prefix(bytes, { fatal });
  return held === 0 ? text : text + malformed(fatal, bytes.length - held);
}

/** The text of `bytes` up to a sequence the last bytes begin and do not finish, and how
 * many bytes that sequence has so far: what a streaming decoder keeps for the next chunk. */
export function decodeUtf8Prefix(bytes, { fatal = false } = {}) {
  let out = '';
  let code = 0;
  let needed = 0;
  let seen = 0;
  let lower = 0x80;
  let upper = 0xbf;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (needed === 0) {
      if (b < 0x80) out += String.fromCharCode(b);
      else if (b >= 0xc2 && b <= 0xdf) [needed, code] = [1, b & 0x1f];
      else if (b >= 0xe0 && b <= 0xef) {
        if (b === 0xe0) lower = 0xa0;
        if (b === 0xed) upper = 0x9f;
        [needed, code] = [2, b & 0x0f];
      } else if (b >= 0xf0 && b <= 0xf4) {
        if (b === 0xf0) lower = 0x90;
        if (b === 0xf4) upper = 0x8f;
        [needed, code] = [3, b & 0x07];
      } else out += malformed(fatal, i);
      continue;
    }
    if (b < lower || b > upper) {
      // The sequence ends early: one replacement, and this byte starts afresh.
      [code, needed, seen, lower, upper] = [0, 0, 0, 0x80, 0xbf];
      out += malformed(fatal, i);
      i--;
      continue;
    }
    [lower, upper] = [0x80, 0xbf];
    code = (code << 6) | (b & 0x3f);
    if (++seen === needed) {
      out += String.fromCodePoint(code);
      [code, needed, seen] = [0, 0, 0];
    }
  }
  return { text: out, held: needed === 0 ? 0 : seen + 1 };
}

function malformed(fatal, offset) {
  if (fatal) throw new TypeError(`the input is not valid UTF-8 (at byte ${offset})`);
  return '\ufffd';
}
