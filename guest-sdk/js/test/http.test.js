// The HTTP client: fetch's arguments and response over the contract's import, bodies as
// UTF-8 without TextEncoder, and the host's reasons for no response as errors.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { HttpRequestError, http } from '@kubewasm/sdk';
import { decodeUtf8, encodeUtf8 } from '../src/utf8.js';

/** Runs `f` with the host's import answered by `answer`; the requests it got. */
function withHost(answer, f) {
  const requests = [];
  const previous = http.useTransport((r) => {
    requests.push(r);
    return answer(r);
  });
  try {
    return { result: f(), requests };
  } finally {
    http.useTransport(previous);
  }
}

const ok = (body = '', headers = []) => () => ({ status: 200, headers, body: encodeUtf8(body) });

test('fetch sends the method, headers and body fetch would', () => {
  const { requests } = withHost(ok(), () => {
    http.fetch('https://api.example.com/a', { method: 'post', headers: { 'X-Trace': '1' }, body: 'hé' });
    http.fetch(new URL('https://api.example.com/b'), { method: 'PUT', headers: [['content-type', 'application/json']], body: '{}', timeoutMs: 2500 });
    http.fetch({ url: 'https://api.example.com/c' }, { body: new Uint8Array([0, 1]).buffer });
  });
  assert.deepEqual(requests.map((r) => [r.method, r.url, r.headers, [...r.body], r.timeoutMs]), [
    ['POST', 'https://api.example.com/a', [['x-trace', '1'], ['content-type', 'text/plain;charset=UTF-8']], [104, 195, 169], undefined],
    ['PUT', 'https://api.example.com/b', [['content-type', 'application/json']], [123, 125], 2500],
    ['GET', 'https://api.example.com/c', [], [0, 1], undefined],
  ]);
  assert.throws(() => http.fetch('https://x', { body: { a: 1 } }), TypeError);
});

test('the response reads as fetch reads one, synchronously', () => {
  const headers = [['content-type', 'application/json'], ['set-cookie', 'a=1'], ['set-cookie', 'b=2']];
  const { result: res } = withHost(() => ({ status: 201, headers, body: encodeUtf8('{"ok":"é"}') }), () => http.fetch('https://api.example.com/'));
  assert.deepEqual([res.status, res.ok, res.url, res.redirected], [201, true, 'https://api.example.com/', false]);
  assert.equal(res.headers.get('Set-Cookie'), 'a=1, b=2');
  assert.deepEqual([...res.headers], [['content-type', 'application/json'], ['set-cookie', 'a=1, b=2']]);
  assert.deepEqual(res.clone().json(), { ok: 'é' });
  assert.equal(res.text(), '{"ok":"é"}');
  assert.deepEqual([...res.bytes()].length, 11);
  const { result: missing } = withHost(() => ({ status: 404, headers: [], body: new Uint8Array(0) }), () => http.fetch('https://api.example.com/'));
  assert.equal(missing.ok, false);
  assert.equal(missing.headers.get('etag'), null);
  const { result: html } = withHost(ok('<html>'), () => http.fetch('https://api.example.com/x'));
  assert.throws(() => html.json(), (e) => e.retryable === false && e.message.startsWith('https://api.example.com/x: the response is not JSON'));
});

test("each of the host's reasons is an HttpRequestError, retryable or not", () => {
  const kinds = Object.fromEntries(
    http.ERROR_KINDS.map((kind) => {
      const fail = () => {
        throw Object.assign(new Error('x'), { payload: { tag: kind, val: `https://api.example.com:443: ${kind}` } });
      };
      try {
        withHost(fail, () => http.fetch('https://api.example.com/'));
      } catch (e) {
        return [kind, [e instanceof HttpRequestError, e.retryable, e.reason, e.message]];
      }
      return [kind, 'no error'];
    }),
  );
  assert.deepEqual(kinds, {
    denied: [true, false, 'https://api.example.com:443: denied', 'HTTP request denied: https://api.example.com:443: denied'],
    timeout: [true, true, 'https://api.example.com:443: timeout', 'HTTP request timeout: https://api.example.com:443: timeout'],
    'too-large': [true, false, 'https://api.example.com:443: too-large', 'HTTP request too-large: https://api.example.com:443: too-large'],
    'too-many-requests': [true, false, 'https://api.example.com:443: too-many-requests', 'HTTP request too-many-requests: https://api.example.com:443: too-many-requests'],
    failed: [true, true, 'https://api.example.com:443: failed', 'HTTP request failed: https://api.example.com:443: failed'],
  });
});

test('without a harness nothing leaves the process', () => {
  assert.throws(() => http.fetch('https://api.example.com/'), (e) => e instanceof HttpRequestError && e.kind === 'denied' && e.reason.includes('no network outside a component'));
});

test('UTF-8 is encoded and decoded as TextEncoder and TextDecoder do, malformed bytes included', () => {
  for (const text of ['', 'abc', 'é€😀', 'x\ud800y', 'Ω'.repeat(100)]) {
    assert.deepEqual(encodeUtf8(text), new TextEncoder().encode(text));
  }
  const samples = [[0xff], [0xe2, 0x82], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x61, 0xe2, 0x28, 0xa1], [0xf0, 0x9f, 0x98]];
  for (const bytes of samples) {
    const b = new Uint8Array(bytes);
    assert.equal(decodeUtf8(b), new TextDecoder().decode(b), bytes.join(','));
  }
});
