// The globals the SDK defines for QuickJS (src/globals.js), held to Node's own: crypto over
// the host's random bytes, Math.random, and TextEncoder and TextDecoder byte for byte.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';

import { sandboxGlobals } from '../src/globals.js';

/** The globals over a source that hands out `bytes` in order, and what it was asked for. */
function withBytes(bytes) {
  const asked = [];
  let next = 0;
  const globals = sandboxGlobals((n) => {
    asked.push(n);
    const out = bytes.slice(next, next + n);
    next += n;
    return out;
  });
  return { globals, asked };
}

const real = sandboxGlobals((n) => new Uint8Array(randomBytes(n)));

test('getRandomValues fills the array in place, of any integer type, with the host bytes', () => {
  const { globals, asked } = withBytes(Uint8Array.from({ length: 64 }, (_, i) => i + 1));
  const buffer = new ArrayBuffer(16);
  const view = new Uint16Array(buffer, 4, 4);
  assert.equal(globals.crypto.getRandomValues(view), view);
  assert.deepEqual([...new Uint8Array(buffer)], [0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0]);
  const big = globals.crypto.getRandomValues(new BigUint64Array(1));
  assert.equal(big[0], new DataView(Uint8Array.from([9, 10, 11, 12, 13, 14, 15, 16]).buffer).getBigUint64(0, true));
  assert.deepEqual(asked, [8, 8]);
});

test('getRandomValues refuses what the Web Crypto API refuses', () => {
  assert.throws(() => real.crypto.getRandomValues(new Float64Array(2)), TypeError);
  assert.throws(() => real.crypto.getRandomValues([1, 2]), TypeError);
  assert.throws(() => real.crypto.getRandomValues(new Uint8Array(65537)), /65537 bytes asked for, at most 65536/);
  assert.equal(real.crypto.getRandomValues(new Uint8Array(65536)).length, 65536);
});

test('randomUUID is a version 4 UUID of the host bytes, different every time', () => {
  const { globals } = withBytes(new Uint8Array(16).fill(0xff));
  assert.equal(globals.crypto.randomUUID(), 'ffffffff-ffff-4fff-bfff-ffffffffffff');
  const uuids = new Set(Array.from({ length: 100 }, () => real.crypto.randomUUID()));
  assert.equal(uuids.size, 100);
  for (const uuid of uuids) assert.match(uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});

test('Math.random takes 53 bits from the host each time: from 0 up to just below 1', () => {
  assert.equal(withBytes(new Uint8Array(7)).globals.random(), 0);
  assert.equal(withBytes(new Uint8Array(7).fill(0xff)).globals.random(), 1 - 2 ** -53);
  const { globals, asked } = withBytes(Uint8Array.from([0x10, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0]));
  assert.deepEqual([globals.random(), globals.random()], [0.5, 0.5]);
  assert.deepEqual(asked, [7, 7]);
  const draws = Array.from({ length: 1000 }, () => real.random());
  assert.ok(draws.every((x) => x >= 0 && x < 1));
  assert.equal(new Set(draws).size, 1000);
});

const TEXTS = ['', 'plain', 'grüße, ☃ 日本 😀', 'lone \ud800 high', 'lone \udfff low', 'pair \ud83d\ude00', '\ufeffbom', '\u0000\u007f\u0080\u07ff\u0800\uffff'];

test('TextEncoder encodes as Node does, a lone surrogate as U+FFFD', () => {
  const ours = new real.TextEncoder();
  const node = new TextEncoder();
  assert.equal(ours.encoding, 'utf-8');
  for (const text of TEXTS) assert.deepEqual(ours.encode(text), node.encode(text), JSON.stringify(text));
  assert.deepEqual(ours.encode(), new Uint8Array(0));
});

test('TextEncoder.encodeInto writes whole characters that fit, as Node does', () => {
  const ours = new real.TextEncoder();
  const node = new TextEncoder();
  for (const text of TEXTS) {
    for (let size = 0; size <= 24; size++) {
      const [a, b] = [new Uint8Array(size), new Uint8Array(size)];
      assert.deepEqual(ours.encodeInto(text, a), node.encodeInto(text, b), `${JSON.stringify(text)} into ${size}`);
      assert.deepEqual(a, b);
    }
  }
});

/** Byte sequences valid, malformed, truncated and with a byte order mark. */
const BYTES = [
  [],
  [0x68, 0x69],
  [...new TextEncoder().encode('grüße, ☃ 日本 😀')],
  [0xef, 0xbb, 0xbf, 0x61],
  [0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf],
  [0xc3],
  [0xe2, 0x98],
  [0xf0, 0x9f, 0x98],
  [0x80, 0x61],
  [0xc0, 0xaf],
  [0xe0, 0x80, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0xf5, 0x61],
  [0xe2, 0x41, 0x98, 0x83],
  [0xef, 0xbf, 0xbd],
];

/** What `decoder` makes of `bytes`, or the name of the error it throws. */
function decoded(decoder, bytes, options) {
  try {
    return decoder.decode(bytes, options);
  } catch (e) {
    return e.name;
  }
}

test('TextDecoder decodes as Node does: replacement, fatal and the byte order mark', () => {
  for (const options of [{}, { fatal: true }, { ignoreBOM: true }]) {
    const ours = new real.TextDecoder('utf-8', options);
    const node = new TextDecoder('utf-8', options);
    for (const bytes of BYTES) {
      const input = Uint8Array.from(bytes);
      assert.equal(decoded(ours, input), decoded(node, input), `${JSON.stringify(options)} ${bytes}`);
    }
  }
  for (let i = 0; i < 500; i++) {
    const input = new Uint8Array(randomBytes(1 + (i % 12)));
    assert.equal(new real.TextDecoder().decode(input), new TextDecoder().decode(input), `${input}`);
  }
});

test('TextDecoder streams a sequence split anywhere as Node does', () => {
  for (const options of [{}, { fatal: true }, { ignoreBOM: true }]) {
    for (const bytes of BYTES) {
      for (let cut = 0; cut <= bytes.length; cut++) {
        const chunks = [Uint8Array.from(bytes.slice(0, cut)), Uint8Array.from(bytes.slice(cut))];
        const run = (decoder) =>
          [...chunks.map((c) => decoded(decoder, c, { stream: true })), decoded(decoder, undefined)].join('|');
        const [ours, node] = [new real.TextDecoder('utf-8', options), new TextDecoder('utf-8', options)];
        assert.equal(run(ours), run(node), `${JSON.stringify(options)} ${bytes} cut at ${cut}`);
      }
    }
  }
});

test('TextDecoder takes an ArrayBuffer or any view, and only UTF-8', () => {
  const ours = new real.TextDecoder('UTF8');
  assert.equal(ours.encoding, 'utf-8');
  const bytes = new TextEncoder().encode('xx☃');
  assert.equal(ours.decode(bytes.buffer), 'xx☃');
  assert.equal(ours.decode(new DataView(bytes.buffer, 2)), '☃');
  assert.throws(() => new real.TextDecoder('latin1'), /latin1 is not supported here, only utf-8/);
  for (const input of ['text', [104, 105]]) {
    assert.throws(() => new TextDecoder().decode(input), TypeError);
    assert.throws(() => ours.decode(input), /the input must be an ArrayBuffer or a view of one/);
  }
});

test('structuredClone copies what Node copies, shared and cyclic references kept', () => {
  const shared = { n: 1 };
  const cyclic = { name: 'c', list: [shared, shared] };
  cyclic.self = cyclic;
  const bytes = Uint8Array.from([1, 2, 3, 4]);
  const values = [
    undefined, null, true, 3.5, -0, NaN, 10n, 'text',
    new Date(86400000), /a+b/giu, new Map([[shared, 'x'], ['k', [1, 2]]]), new Set([1, 'a', shared]),
    bytes, new Int16Array(bytes.buffer, 2, 1), new DataView(bytes.buffer, 1, 2), bytes.buffer,
    Object(false), Object(2), Object('s'), Object(3n),
    new TypeError('bad', { cause: shared }), new (class Custom extends Error {})('custom'),
    [1, , 3], Object.assign([1], { extra: 'kept' }), new (class Point { x = 1; y = 2; })(), cyclic,
  ];
  for (const value of values) {
    const [ours, node] = [real.structuredClone(value), structuredClone(value)];
    assert.deepStrictEqual(ours, node, String(value));
    if (value !== null && typeof value === 'object') assert.notEqual(ours, value);
  }
  const copy = real.structuredClone(cyclic);
  assert.equal(copy.self, copy);
  assert.equal(copy.list[0], copy.list[1]);
  const views = real.structuredClone([bytes, new Int16Array(bytes.buffer, 2, 1)]);
  assert.equal(views[0].buffer, views[1].buffer, 'views of one buffer share the copy of it');
});

test('structuredClone refuses what Node refuses', () => {
  for (const value of [() => 1, Symbol('s'), new WeakMap(), Promise.resolve(), { f() {} }]) {
    assert.throws(() => structuredClone(value), { name: 'DataCloneError' });
    assert.throws(() => real.structuredClone(value), { name: 'DataCloneError' });
  }
  assert.throws(() => real.structuredClone(new ArrayBuffer(1), { transfer: [new ArrayBuffer(1)] }), /transferring is not supported/);
});
