// The survey page: builds the questions from the public description, randomizes the
// answers on this device with lopub.js and sends only the randomized report.
import { checkAnswers, makeReport, request, sendReport } from '/js/lopub.js';

const name = document.body.dataset.collection;
const api = `/api/c/${encodeURIComponent(name)}`;
const $ = (id) => document.getElementById(id);

async function refreshCount() {
  const r = await fetch(`${api}/count`);
  if (r.ok) $('count').textContent = (await r.json()).reports;
}

function question(attr, labels) {
  const fs = document.createElement('fieldset');
  const lg = document.createElement('legend');
  lg.textContent = attr;
  fs.append(lg);
  labels.forEach((label, i) => {
    const id = `q-${attr}-${i}`;
    const input = Object.assign(document.createElement('input'),
      { type: 'radio', name: attr, value: label, id, required: true });
    const lab = Object.assign(document.createElement('label'), { htmlFor: id, textContent: label });
    fs.append(input, lab, document.createElement('br'));
  });
  return fs;
}

async function main() {
  const desc = await (await fetch(api)).json();
  $('privacy').textContent = desc.privacy;
  const box = $('questions');
  box.textContent = '';
  for (const [attr, labels] of Object.entries(desc.questions)) box.append(question(attr, labels));
  // the handler first, then the button: a submit without it would be the browser's own, a GET
  // carrying the true answers in its URL
  // a report whose sending got no answer (it may be stored): sent again as it is when the same
  // answers are sent again, never randomized anew (a second randomization spends epsilon twice)
  let pending = null;
  // a report the service refused (not stored, but the collector has seen its randomization): the
  // same answers are not randomized again, which would hand the collector a second report of them
  const refused = new Map(); // answers key -> the service's refusal
  $('survey').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    $('send').disabled = true;
    const answers = Object.fromEntries(new FormData($('survey')).entries());
    const key = JSON.stringify(Object.keys(desc.questions).map((a) => answers[a]));
    if (refused.has(key)) {
      $('status').textContent = `Not sent: the service refused a randomized report of these answers before `
        + `(${refused.get(key)}); it has seen that report, and a new randomization would cost your privacy `
        + 'budget a second time.';
      $('send').disabled = false;
      return;
    }
    let sent = false; // the report left this page (an error before it, e.g. at enrolment, sent nothing)
    try {
      checkAnswers(desc, answers); // before enrolling: no token spent on an incomplete form
      const resend = pending !== null && pending.key === key;
      if (!resend) {
        // request() tries again after 429 / 503 (rate limit, store unavailable), honouring Retry-After
        const enrol = await request(`${api}/enrol`, { method: 'POST' }, 'enrol');
        pending = { key, body: makeReport(desc, enrol, answers) };
      }
      sent = true;
      await sendReport(`${api}/report`, pending.body, { sentBefore: resend });
      pending = null;
      $('status').textContent = 'Thank you: your randomized report was stored.';
      await refreshCount();
    } catch (e) {
      if (sent && e.status !== undefined && ![429, 503].includes(e.status)) { // refused: not stored
        pending = null;
        refused.set(key, e.message);
      }
      $('status').textContent = `Not sent: ${e.message}`;
      $('send').disabled = false;
    }
  });
  $('send').disabled = false;
  await refreshCount();
}
main();
