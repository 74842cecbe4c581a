// lopub.js against the shared test vectors written by Python (make_vectors.py):
// same public parameters, answers and random words -> the same report, bit for bit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { webcrypto } from 'node:crypto';
import { blake2b } from '../blake2b.js';
import {
  WordSource, bernoulli, randint, marginalReport, bloomReport, assignUser, makeReport, checkAnswers, submit,
  retryAfter, MAX_WAIT,
} from '../lopub.js';
if (!globalThis.crypto) globalThis.crypto = webcrypto; // Node 18: Web Crypto not yet global

const V = JSON.parse(readFileSync(new URL('./vectors.json', import.meta.url), 'utf8'));
const hex = (u) => Buffer.from(u).toString('hex');
const bytes = (h) => new Uint8Array(Buffer.from(h, 'hex'));

test('blake2b matches hashlib (RFC 7693, keyed, multi-block)', () => {
  for (const v of V.blake2b) assert.equal(hex(blake2b(bytes(v.message), bytes(v.key), v.outlen)), v.digest);
});

test('bernoulli and randint use the same words the same way', () => {
  for (const v of V.bernoulli) {
    const src = new WordSource(v.words);
    assert.equal(bernoulli(v.p, src), v.report, `p=${v.p}`);
    assert.equal(src.used, v.words.length);
  }
  for (const v of V.randint) {
    const src = new WordSource(v.words);
    assert.equal(randint(v.n, src), v.report, `n=${v.n}`);
    assert.equal(src.used, v.words.length);
  }
});

test('marginal-plan reports (GRR, OUE, OLH) equal Python bit for bit', () => {
  for (const v of V.marginal) {
    const src = new WordSource(v.words);
    assert.deepEqual(marginalReport(V.marginal_description, v.subset, v.answers, src), v.report);
    assert.equal(src.used, v.words.length);
  }
});

test('Bloom reports (keyed BLAKE2b positions, bit flips) equal Python bit for bit', () => {
  for (const v of V.bloom) {
    const src = new WordSource(v.words);
    assert.equal(bloomReport(V.bloom_description.spec, v.answers, src), v.report);
    assert.equal(src.used, v.words.length);
  }
});

test('keyed assignment of user ids equals lopub.collect.assign_user', () => {
  for (const v of V.assign) assert.equal(assignUser(v.key, v.user_id, v.g), v.subset);
});

test('makeReport builds the request body; a wrong answer is refused', () => {
  const v = V.marginal[0];
  const body = makeReport(V.marginal_description, { token: 't', subset: v.subset }, v.answers,
    new WordSource(v.words));
  assert.deepEqual(body, { token: 't', subset: v.subset, report: v.report });
  assert.throws(() => makeReport(V.marginal_description, { token: 't', subset: 0 }, { sex: 'x', age: '<30' }),
    /answer for sex \("x"\) must be one of \["Female","Male"\]/);
});

test('makeReport refuses an enrolment under another plan than the description read', () => {
  const v = V.marginal[0];
  const desc = V.marginal_description;
  assert.match(desc.plan_id, /^[0-9a-f]{16}$/);
  const same = makeReport(desc, { token: 't', subset: v.subset, plan_id: desc.plan_id }, v.answers,
    new WordSource(v.words));
  assert.deepEqual(same, { token: 't', subset: v.subset, report: v.report });
  const src = new WordSource(v.words);
  assert.throws(() => makeReport(desc, { token: 't', subset: v.subset, plan_id: '0123456789abcdef' }, v.answers, src),
    new RegExp(`enrolment plan_id \\("0123456789abcdef"\\) must be the plan this page read \\("${desc.plan_id}"\\)`));
  assert.equal(src.used, 0); // refused before any randomness is drawn
});

test('answers are checked before enrolling, also outside the assigned subset', async () => {
  const desc = V.marginal_description;
  const good = { sex: 'Female', age: '<30', city: 'city-1', pet: 'cat' };
  checkAnswers(desc, good);
  assert.throws(() => checkAnswers(desc, { ...good, pet: 'hamster' }),
    /answer for pet \("hamster"\) must be one of \["cat","dog","🐟 fish","none"\]/);
  assert.throws(() => checkAnswers(desc, { sex: 'Female', age: '<30', city: 'city-1' }), /missing \["pet"\]/);
  assert.throws(() => checkAnswers(desc, { ...good, pett: 'cat' }), /\["pett"\], which are not questions/);
  assert.throws(() => checkAnswers(desc, null), TypeError);
  const calls = [];
  const saved = globalThis.fetch;
  globalThis.fetch = async (url) => { calls.push(url); return { ok: true, json: async () => desc }; };
  try {
    await assert.rejects(submit('http://x', 'survey', { ...good, pet: 'hamster' }), /answer for pet/);
  } finally {
    globalThis.fetch = saved;
  }
  assert.deepEqual(calls, ['http://x/api/c/survey']); // the description only: no enrolment
});

test('Retry-After: seconds, an HTTP date, back-off without one, null beyond MAX_WAIT', () => {
  assert.equal(retryAfter('2', 0), 2);
  assert.equal(retryAfter(null, 0), 1);
  assert.equal(retryAfter(undefined, 3), 8);
  assert.equal(retryAfter('soon', 1), 2);
  assert.equal(retryAfter(String(MAX_WAIT + 1), 0), null);
  const now = Date.parse('Fri, 27 Nov 2026 12:00:00 GMT');
  assert.equal(retryAfter('Fri, 27 Nov 2026 12:00:05 GMT', 0, now), 5);
  assert.equal(retryAfter('Fri, 27 Nov 2026 11:00:00 GMT', 0, now), 0);
  assert.equal(retryAfter('Fri, 27 Nov 2026 13:00:00 GMT', 0, now), null);
});

test('submit retries 429 / 503 after Retry-After, gives up on other statuses and after the retries', async () => {
  const desc = V.marginal_description;
  const answers = { sex: 'Female', age: '<30', city: 'city-1', pet: 'cat' };
  const saved = globalThis.fetch;
  const reply = (status, body, retry) => ({
    ok: status < 300, status, json: async () => body, text: async () => JSON.stringify(body),
    headers: { get: (h) => (h === 'retry-after' ? retry : null) },
  });
  const run = async (script, options) => {
    const calls = [];
    const slept = [];
    globalThis.fetch = async (url) => {
      calls.push(url);
      return script.shift()(url);
    };
    try {
      const out = await submit('http://x', 'survey', answers, { sleep: async (s) => slept.push(s), ...options });
      return { out, calls, slept };
    } catch (err) {
      return { err, calls, slept };
    } finally {
      globalThis.fetch = saved;
    }
  };
  const enrol = { token: 't', subset: 0 };
  let r = await run([() => reply(200, desc), () => reply(503, { error: 'store' }, '2'), () => reply(200, enrol),
    () => reply(429, { error: 'slow down' }), () => reply(200, { accepted: 1 })]);
  assert.deepEqual(r.out, { accepted: 1 });
  assert.deepEqual(r.slept, [2, 1]);
  assert.equal(r.calls.length, 5);
  r = await run([() => reply(200, desc), () => reply(400, { error: 'bad' })]);
  assert.match(r.err.message, /^enrol: 400 /);
  assert.deepEqual(r.slept, []);
  r = await run([() => reply(200, desc), () => reply(503, {}), () => reply(503, {})], { retries: 1 });
  assert.match(r.err.message, /^enrol: 503 \(after 2 attempts\)/);
  r = await run([() => reply(503, {}, '3600')]);
  assert.match(r.err.message, /^collection: 503 /);
  assert.deepEqual(r.slept, []);
});

test('Web Crypto words: bernoulli(1/4) frequency within 5 sd', () => {
  const src = new WordSource();
  const n = 40000;
  let hits = 0;
  for (let i = 0; i < n; i++) hits += bernoulli(0.25, src) ? 1 : 0;
  const sd = Math.sqrt(n * 0.25 * 0.75);
  assert.ok(Math.abs(hits - n / 4) < 5 * sd, `hits ${hits}`);
});

test('a missing answer (null, undefined) is the missing-value category, as DeviceClient reads it', async () => {
  const { withMissing, WordSource: WS } = await import('../lopub.js');
  const attrs = [{ name: 'income', categories: ['low', 'high', 'unknown'], missing: 'unknown' },
    { name: 'smoker', categories: ['yes', 'no'] }];
  const d = { questions: { income: ['low', 'high', 'unknown'], smoker: ['yes', 'no'] }, plan: { domain: { attributes: attrs } } };
  checkAnswers(d, { income: null, smoker: 'no' }); // no error
  assert.deepEqual(withMissing(d, { income: undefined, smoker: 'no' }), { income: 'unknown', smoker: 'no' });
  assert.throws(() => checkAnswers(d, { income: 'low', smoker: null }),
    /answer for smoker is missing \(null\) but smoker has no missing-value category; it must be one of \["yes","no"\]/);
  // the report of null equals that of the missing label, word for word
  const desc = structuredClone(V.marginal_description);
  const first = desc.plan.domain.attributes.find((a) => a.name === desc.plan.subsets[0][0]); // reported by subset 0
  first.missing = first.categories[first.categories.length - 1];
  const words = Array.from({ length: 256 }, (_, i) => (i * 2654435761) >>> 0);
  const base = Object.fromEntries(Object.entries(desc.questions).map(([a, labels]) => [a, labels[0]]));
  const enrol = { token: 't', subset: 0, plan_id: desc.plan_id };
  assert.deepEqual(makeReport(desc, enrol, { ...base, [first.name]: null }, new WS(words)),
    makeReport(desc, enrol, { ...base, [first.name]: first.missing }, new WS(words)));
});
