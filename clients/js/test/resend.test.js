// One randomization per report: a report request that gets no answer (the service may have
// stored it) is sent again as it was, same token and same randomized report, never randomized
// anew (a second randomization of the same answers spends epsilon twice).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { webcrypto } from 'node:crypto';
import { submit, sendReport } from '../lopub.js';
if (!globalThis.crypto) globalThis.crypto = webcrypto;

const V = JSON.parse(readFileSync(new URL('./vectors.json', import.meta.url), 'utf8'));
const desc = V.marginal_description;
const answers = { sex: 'Female', age: '<30', city: 'city-1', pet: 'cat' };
const reply = (status, body) => ({
  ok: status < 300, status, json: async () => body, text: async () => JSON.stringify(body),
  headers: { get: () => null },
});

/** fetch over a fake service that stores a report once per token; `lose` report answers are lost. */
function service({ lose = 0, down = 0 } = {}) {
  const used = new Set();
  const sent = [];
  let tokens = 0;
  const fetch = async (url, init) => {
    if (url.endsWith('/enrol')) { tokens += 1; return reply(201, { token: `t${tokens}`, subset: 1, plan_id: desc.plan_id }); }
    if (!url.endsWith('/report')) return reply(200, desc);
    if (down > 0) { down -= 1; throw new TypeError('fetch failed'); }
    sent.push(init.body);
    const { token } = JSON.parse(init.body);
    const status = used.has(token) ? 409 : 201;
    used.add(token);
    if (lose > 0) { lose -= 1; throw new TypeError('fetch failed'); } // stored, answer lost
    return status === 201 ? reply(201, { stored: 1 }) : reply(409, { error: 'token was already used' });
  };
  return { fetch, used, sent, tokens: () => tokens };
}

async function withFetch(fake, run) {
  const saved = globalThis.fetch;
  globalThis.fetch = fake;
  try { return await run(); } finally { globalThis.fetch = saved; }
}

const quick = { sleep: async () => {} };

test('submit: a lost answer is followed by the same body, stored once', async () => {
  const s = service({ lose: 1 });
  const out = await withFetch(s.fetch, () => submit('http://x', 'survey', answers, quick));
  assert.deepEqual(out, { stored: 1 });
  assert.equal(s.tokens(), 1); // one enrolment
  assert.equal(s.used.size, 1);
  assert.equal(s.sent.length, 2);
  assert.equal(s.sent[0], s.sent[1]); // one randomization, sent twice
});

test('sendReport: no answer at all keeps the body pending; its resend answers stored', async () => {
  const s = service({ down: 4 });
  const body = { token: 'tx', subset: 1, report: 3 };
  await withFetch(s.fetch, async () => {
    await assert.rejects(sendReport('http://x/api/c/survey/report', body, quick),
      (err) => err.pending === true && /no answer after 4 attempts/.test(err.message));
    assert.deepEqual(await sendReport('http://x/api/c/survey/report', body, { ...quick, sentBefore: true }), { stored: 1 });
  });
  assert.equal(s.used.size, 1);
  const stored = service({ lose: 4 }); // every attempt stored-or-replayed, no answer: then a later resend
  await withFetch(stored.fetch, async () => {
    await assert.rejects(sendReport('http://x/api/c/survey/report', body, quick), (err) => err.pending === true);
    assert.deepEqual(await sendReport('http://x/api/c/survey/report', body, { ...quick, sentBefore: true }), { stored: 1 });
  });
  assert.equal(new Set(stored.sent).size, 1);
});

test('sendReport: a 409 for a body never sent before is an error, not success', async () => {
  const s = service();
  s.used.add('tx');
  await withFetch(s.fetch, async () => {
    await assert.rejects(sendReport('http://x/api/c/survey/report', { token: 'tx', subset: 1, report: 3 }, quick),
      (err) => err.status === 409 && /^report: 409 /.test(err.message));
  });
});

test('submit: a refused report is not randomized again; a lost one is resent by the next submit', async () => {
  // a collector that answers 422 to every report would otherwise get a fresh randomization of the
  // same answers from each submit (epsilon spent once per attempt)
  const sent = [];
  let tokens = 0;
  const refusing = async (url, init) => {
    if (url.endsWith('/enrol')) { tokens += 1; return reply(201, { token: `r${tokens}`, subset: 1, plan_id: desc.plan_id }); }
    if (!url.endsWith('/report')) return reply(200, desc);
    sent.push(init.body);
    return reply(422, { error: 'refused' });
  };
  await withFetch(refusing, async () => {
    await assert.rejects(submit('http://x', 'refuses', answers, quick), (err) => err.status === 422 && !err.refusedBefore);
    await assert.rejects(submit('http://x', 'refuses', answers, quick),
      (err) => err.refusedBefore === true && err.status === 422 && /would cost epsilon a second time/.test(err.message));
  });
  assert.equal(tokens, 1); // no second enrolment
  assert.equal(sent.length, 1); // no second randomization left the page
  const other = { ...answers, pet: answers.pet === 'cat' ? 'dog' : 'cat' }; // other answers: a new report
  await withFetch(refusing, () => assert.rejects(submit('http://x', 'refuses', other, quick), (err) => !err.refusedBefore));
  assert.equal(sent.length, 2);
  const s = service({ down: 4 }); // no attempt of the first submit gets through: its body is kept
  await withFetch(s.fetch, async () => {
    await assert.rejects(submit('http://x', 'lossy', answers, quick), (err) => err.pending === true);
    assert.deepEqual(await submit('http://x', 'lossy', answers, quick), { stored: 1 });
  });
  assert.equal(s.tokens(), 1);
  assert.equal(s.sent.length, 1);
});
