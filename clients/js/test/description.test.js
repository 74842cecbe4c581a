// The device never randomizes with parameters less private than the epsilon the description
// states: in the LDP threat model the collector serves the description, and a description whose
// GRR keeps the value with p = 1 (or whose k is smaller than the subset's cells, or whose Bloom f
// flips nothing) would send the true answer while its privacy statement promises epsilon.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { webcrypto } from 'node:crypto';
import { makeReport, submit, WordSource } from '../lopub.js';
if (!globalThis.crypto) globalThis.crypto = webcrypto;

const V = JSON.parse(readFileSync(new URL('./vectors.json', import.meta.url), 'utf8'));
const copy = (x) => JSON.parse(JSON.stringify(x));
const answers = { sex: 'Female', age: '<30', city: 'city-1', pet: 'cat' };

function tampered(edit) {
  const desc = copy(V.marginal_description);
  edit(desc);
  return desc;
}

test('honest descriptions (the shared vectors) randomize', () => {
  const desc = V.marginal_description;
  for (let i = 0; i < desc.plan.subsets.length; i++) {
    makeReport(desc, { token: 't', subset: i, plan_id: desc.plan_id }, answers);
  }
  const bloom = V.bloom_description;
  const a = Object.fromEntries(bloom.spec.domain.attributes.map((x) => [x.name, String(x.categories[0])]));
  makeReport(bloom, { token: 't', plan_id: bloom.plan_id }, a);
});

test('a description weaker than its stated epsilon is refused before any random word is drawn', async () => {
  const cases = [
    [tampered((d) => { d.subset_oracles[0].p = 1; }), /subset 0 \(grr, p 1, .*\) is Infinity-LDP, not the stated epsilon 1\.5/, 0],
    [tampered((d) => { d.subset_oracles[1].q = 0.01; }), /subset 1 \(oue, p 0\.5, q 0\.01\) is 4\.59\d*-LDP/, 1],
    [tampered((d) => { d.subset_oracles[2].p = 0.9; }), /subset 2 \(olh, p 0\.9, q 0\.2, g 5\)/, 2],
    [tampered((d) => { d.subset_oracles[0].k = 4; }), /subset 0 oracle grr with k 4 is not the plan's grr over 6 cells/, 0],
    [tampered((d) => { d.epsilon = 0.5; }), /epsilon \(0\.5\) is not the plan's \(1\.5\)/, 0],
    [tampered((d) => { d.subset_oracles[2].g = 1.5; }), /subset 2 olh g \(1\.5\) must be an integer >= 2/, 2],
  ];
  for (const [desc, message, subset] of cases) {
    const src = new WordSource([]); // any draw would throw 'ran out'
    assert.throws(() => makeReport(desc, { token: 't', subset, plan_id: desc.plan_id }, answers, src),
      (err) => err instanceof RangeError && message.test(err.message), message.source);
    assert.equal(src.used, 0);
  }
  const bloom = copy(V.bloom_description);
  bloom.spec.f = 1e-9; // almost no flips: far above the stated epsilon
  const a = Object.fromEntries(bloom.spec.domain.attributes.map((x) => [x.name, String(x.categories[0])]));
  assert.throws(() => makeReport(bloom, { token: 't', plan_id: bloom.plan_id }, a),
    /its Bloom reports \(f 1e-9, .*\) are .*-LDP, not the stated epsilon 2\.99/);
  const half = copy(V.bloom_description);
  half.spec.h = half.spec.h.map(() => 0.5); // one position is hashed, half of one would be counted
  assert.throws(() => makeReport(half, { token: 't', plan_id: half.plan_id }, a), /spec f .* or h \(\[0\.5,0\.5,0\.5,0\.5\]\) is malformed/);
  const calls = [];
  const saved = globalThis.fetch;
  globalThis.fetch = async (url) => { calls.push(url); return { ok: true, json: async () => cases[0][0] }; };
  try {
    await assert.rejects(submit('http://x', 'survey', answers), /Infinity-LDP/);
  } finally {
    globalThis.fetch = saved;
  }
  assert.deepEqual(calls, ['http://x/api/c/survey']); // refused before enrolling
});
