// lopub device client: randomizes a person's answers in the browser (or Node >= 19) and
// sends only the randomized report. Bit-compatible with lopub/client/device.py: the same
// public parameters, answers and random 32-bit words give the same report. Randomness
// comes from the Web Crypto API (crypto.getRandomValues); never from Math.random.
import { blake2b } from './blake2b.js';

export const HASH_PRIME = 2147483647; // 2^31 - 1, the OLH hash family's prime
const utf8 = (s) => new TextEncoder().encode(s);

/** Random 32-bit words from Web Crypto, or from a fixed list (test vectors). */
export class WordSource {
  constructor(words = null) {
    this.words = words;
    this.used = 0;
    this.buf = new Uint32Array(256);
    this.pos = this.buf.length;
  }
  word() {
    this.used += 1;
    if (this.words !== null) {
      if (this.used > this.words.length) throw new RangeError(`words: ran out after ${this.words.length}`);
      return this.words[this.used - 1] >>> 0;
    }
    if (this.pos === this.buf.length) { globalThis.crypto.getRandomValues(this.buf); this.pos = 0; }
    return this.buf[this.pos++];
  }
}

/** Exact binary digits of a float p in (0, 1), most significant first. */
export function binaryDigits(p) {
  const out = [];
  let x = p;
  while (x > 0) { x *= 2; const d = x >= 1 ? 1 : 0; x -= d; out.push(d); }
  return out;
}

/** true with probability exactly p: uniform digits compared with p's binary expansion. */
export function bernoulli(p, src) {
  if (p <= 0) return false;
  if (p >= 1) return true;
  const digits = binaryDigits(p);
  let i = 0;
  while (i < digits.length) {
    const w = src.word();
    for (let bit = 31; bit >= 0; bit--) {
      if (i >= digits.length) return false;
      const u = (w >>> bit) & 1;
      if (u !== digits[i]) return u < digits[i];
      i += 1;
    }
  }
  return false;
}

/** Uniform integer in [0, n), 1 <= n <= 2^32, by rejection. */
export function randint(n, src) {
  const limit = 4294967296 - (4294967296 % n);
  for (;;) { const w = src.word(); if (w < limit) return w % n; }
}

export function grr(v, k, p, src) {
  if (bernoulli(p, src)) return v;
  return (v + 1 + randint(k - 1, src)) % k;
}

export function unaryBits(v, k, p, q, src) {
  const bits = new Uint8Array(k);
  for (let j = 0; j < k; j++) bits[j] = bernoulli(j === v ? p : q, src) ? 1 : 0;
  return bits;
}

/** numpy.packbits order (first bit = most significant bit of byte 0), as hex. */
export function packHex(bits) {
  const bytes = new Uint8Array(Math.ceil(bits.length / 8));
  for (let i = 0; i < bits.length; i++) if (bits[i]) bytes[i >> 3] |= 0x80 >> (i & 7);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

export function olh(v, g, p, src) {
  const a = 1 + randint(HASH_PRIME - 1, src);
  const b = randint(HASH_PRIME, src);
  const h = Number(((BigInt(a) * BigInt(v) + BigInt(b)) % BigInt(HASH_PRIME)) % BigInt(g));
  return [a, b, grr(h, g, p, src)];
}

/** Flat index (first attribute slowest) of the answers in a subset's joint domain. */
export function jointValue(domain, subset, answers) {
  let v = 0;
  for (const attr of subset) {
    const labels = domain[attr];
    const code = labels.indexOf(String(answers[attr]));
    if (code < 0) throw new RangeError(`answer for ${attr} (${answers[attr]}) must be one of ${labels}`);
    v = v * labels.length + code;
  }
  return v;
}

/** Wire report of subset i of a marginal plan (desc: the service's public description). */
export function marginalReport(desc, i, answers, src) {
  const o = desc.subset_oracles[i];
  const v = jointValue(desc.questions, desc.plan.subsets[i], answers);
  if (o.oracle === 'grr') return grr(v, o.k, o.p, src);
  if (o.oracle === 'oue') return packHex(unaryBits(v, o.k, o.p, o.q, src));
  if (o.oracle === 'olh') return olh(v, o.g, o.p, src);
  throw new RangeError(`oracle ${o.oracle} is not one of grr, oue, olh`);
}

const positionsCache = new Map();

/** Bit positions of one value's Bloom filter (lopub.spec.bloom_positions); public, so cached. */
export function bloomPositions(key, attr, salt, label, h, m) {
  const id = JSON.stringify([key, attr, salt, label, h, m]);
  if (!positionsCache.has(id)) positionsCache.set(id, computePositions(key, attr, salt, label, h, m));
  return positionsCache.get(id);
}

function computePositions(key, attr, salt, label, h, m) {
  const msg = utf8(`${attr}\u0000${salt}\u0000${label}`);
  const k = utf8(key).subarray(0, 64);
  const words = [];
  const take = (digest, count) => {
    for (let i = 0; i < count; i++) {
      let w = 0n;
      for (let j = 7; j >= 0; j--) w = (w << 8n) | BigInt(digest[8 * i + j]);
      words.push(Number(w % BigInt(m)));
    }
  };
  take(blake2b(msg, k, Math.min(64, 8 * h)), Math.min(h, 8));
  for (let j = 1; words.length < h; j++) {
    const more = new Uint8Array(msg.length + 4);
    more.set(msg);
    new DataView(more.buffer).setUint32(msg.length, j, true);
    take(blake2b(more, k, 64), Math.min(h - words.length, 8));
  }
  return words;
}

/** Hex of the packed randomized Bloom report of a record (LoPub Eq. 5). */
export function bloomReport(spec, answers, src) {
  const total = spec.m.reduce((s, x) => s + x, 0);
  const bits = new Uint8Array(total);
  let lo = 0;
  spec.domain.attributes.forEach((a, j) => {
    const label = String(answers[a.name]);
    if (!a.categories.map(String).includes(label)) throw new RangeError(`answer for ${a.name} (${label}) is not a category`);
    for (const pos of bloomPositions(spec.key, a.name, spec.salts[j], label, spec.h[j], spec.m[j])) bits[lo + pos] = 1;
    lo += spec.m[j];
  });
  for (let i = 0; i < total; i++) if (bernoulli(spec.f / 2, src)) bits[i] ^= 1;
  return packHex(bits);
}

/** Keyed BLAKE2b assignment of a user id to one of g subsets (lopub.collect.assign_user). */
export function assignUser(key, userId, g) {
  const d = blake2b(utf8(String(userId)), utf8(key), 8);
  let w = 0n;
  for (const b of d) w = (w << 8n) | BigInt(b);
  return Number(w % BigInt(g));
}

/**
 * Check `answers` ({attribute: label}) against the questions of `desc` (GET /api/c/NAME):
 * every value one of its question's labels, no unknown attribute, every question answered.
 * Throws a RangeError naming the attribute, the value and the labels (TypeError: not an object).
 */
export function checkAnswers(desc, answers) {
  if (answers === null || typeof answers !== 'object' || Array.isArray(answers)) {
    throw new TypeError(`answers (${Array.isArray(answers) ? 'array' : typeof answers}) must be an object {attribute: label}`);
  }
  const questions = desc.questions;
  const names = Object.keys(questions);
  for (const attr of names) {
    const labels = questions[attr].map(String);
    const value = answers[attr];
    if (Object.hasOwn(answers, attr) && (value === null || value === undefined)) { // as DeviceClient's check_answers
      const label = missingLabel(desc, attr);
      if (label === null) {
        throw new RangeError(`answer for ${attr} is missing (${value}) but ${attr} has no missing-value category; `
          + `it must be one of ${JSON.stringify(labels)}`);
      }
      continue;
    }
    if (Object.hasOwn(answers, attr) && !labels.includes(String(value))) {
      throw new RangeError(`answer for ${attr} (${JSON.stringify(value)}) must be one of ${JSON.stringify(labels)}`);
    }
  }
  const unknown = Object.keys(answers).filter((a) => !Object.hasOwn(questions, a));
  if (unknown.length) throw new RangeError(`answers has ${JSON.stringify(unknown)}, which are not questions; the questions are ${JSON.stringify(names)}`);
  const missing = names.filter((a) => !Object.hasOwn(answers, a));
  if (missing.length) throw new RangeError(`answers is missing ${JSON.stringify(missing)}; every question needs an answer`);
}

/** The label of `attr`'s missing-value category in the description's domain, null when it has none. */
export function missingLabel(desc, attr) {
  const attrs = (desc.plan ?? desc.spec)?.domain?.attributes ?? [];
  const a = attrs.find((x) => x.name === attr);
  return a?.missing ?? null;
}

/** The answers with a missing value (null, undefined) as its attribute's missing-value label (checkAnswers first). */
export function withMissing(desc, answers) {
  const out = { ...answers };
  for (const attr of Object.keys(desc.questions)) {
    if (Object.hasOwn(out, attr) && (out[attr] === null || out[attr] === undefined)) out[attr] = missingLabel(desc, attr);
  }
  return out;
}

/** The exact LDP level of a subset's randomizer as the device runs it from its parameters `o`. */
export function oracleLevel(o) {
  const ln = Math.log;
  const { p, q } = o;
  if (o.oracle === 'grr' || o.oracle === 'olh') { // keep w.p. p, else one of the other n - 1 uniformly
    const n = o.oracle === 'grr' ? o.k : o.g;
    return Math.abs(ln(p) - ln((1 - p) / (n - 1)));
  }
  if (o.oracle === 'oue') return Math.abs(ln(p) + ln(1 - q) - ln(1 - p) - ln(q)); // own bit p, others q
  return Infinity;
}

/**
 * Check that what the device would run from `desc` is no less private than the epsilon `desc`
 * states: every subset oracle's level (oracleLevel), or a Bloom spec's sum_j 2 h_j ln((2 - f)/f),
 * at most desc.epsilon, which must be the plan's; each oracle's k the subset's number of cells.
 * A description that fails (a p of 1 would send the true value) throws a RangeError naming it.
 */
export function checkDescription(desc) {
  const eps = desc.epsilon;
  const bad = (what) => { throw new RangeError(`collection ${desc.name}: ${what}; refusing to randomize with it`); };
  if (!(typeof eps === 'number' && eps > 0 && Number.isFinite(eps))) bad(`epsilon (${eps}) must be a finite number > 0`);
  const slack = eps * (1 + 1e-9);
  if (desc.kind === 'bloom') {
    const { f, h } = desc.spec;
    if (!(f > 0 && f < 2) || !Array.isArray(h) || h.length !== desc.spec.domain.attributes.length
      || !h.every((hj) => Number.isInteger(hj) && hj >= 1)) bad(`spec f (${f}) or h (${JSON.stringify(h)}) is malformed`);
    const level = h.reduce((s, hj) => s + 2 * hj * Math.abs(Math.log(1 - f / 2) - Math.log(f / 2)), 0);
    if (!(level <= slack)) bad(`its Bloom reports (f ${f}, h ${JSON.stringify(h)}) are ${level}-LDP, not the stated epsilon ${eps}`);
    return;
  }
  if (desc.plan.epsilon !== eps) bad(`epsilon (${eps}) is not the plan's (${desc.plan.epsilon})`);
  desc.plan.subsets.forEach((subset, i) => {
    const o = desc.subset_oracles[i] ?? {};
    const cells = subset.reduce((n, a) => n * (desc.questions[a] ?? []).length, 1);
    if (o.oracle === 'olh' && !(Number.isInteger(o.g) && o.g >= 2)) bad(`subset ${i} olh g (${o.g}) must be an integer >= 2`);
    if (o.oracle !== desc.plan.oracles[i] || o.k !== Math.max(2, cells)) bad(`subset ${i} oracle ${o.oracle} with k ${o.k} is not the plan's ${desc.plan.oracles[i]} over ${cells} cells`);
    const level = oracleLevel(o);
    if (!(level <= slack)) bad(`subset ${i} (${o.oracle}, p ${o.p}, q ${o.q}${o.g ? `, g ${o.g}` : ''}) is ${level}-LDP, not the stated epsilon ${eps}`);
  });
}

/**
 * Randomize `answers` ({attribute: label}) for the collection `desc` (GET /api/c/NAME) with
 * token info `enrol` (POST .../enrol) and return the request body of POST .../report.
 * The answers are checked first (checkAnswers); an enrolment under another plan than `desc`'s
 * (the service changed its plan since `desc` was read) throws an Error: reload the description;
 * randomizer parameters less private than the epsilon `desc` states throw a RangeError (checkDescription).
 */
export function makeReport(desc, enrol, given, src = new WordSource()) {
  checkAnswers(desc, given);
  const answers = withMissing(desc, given); // a missing value: its attribute's missing-value label
  if (enrol.plan_id !== undefined && enrol.plan_id !== desc.plan_id) { // undefined: a service that does not say
    throw new Error(`enrolment plan_id (${JSON.stringify(enrol.plan_id)}) must be the plan this page read `
      + `(${JSON.stringify(desc.plan_id)}): collection ${desc.name} changed its plan (another epsilon or subsets); reload`);
  }
  checkDescription(desc); // never randomize with parameters weaker than the epsilon stated
  if (desc.kind === 'bloom') return { token: enrol.token, report: bloomReport(desc.spec, answers, src) };
  return { token: enrol.token, subset: enrol.subset, report: marginalReport(desc, enrol.subset, answers, src) };
}

/** HTTP statuses after which a request is sent again: 429 (rate limit), 503 (store unavailable; nothing stored). */
export const RETRY_STATUS = [429, 503];
/** The longest Retry-After (seconds) honoured before giving up (as lopub/serve/client.py). */
export const MAX_WAIT = 30;

/**
 * Seconds to wait before attempt `attempt + 1` from a Retry-After header value (seconds or an HTTP
 * date), else 1, 2, 4 ... seconds; null when the server asks for more than MAX_WAIT.
 */
export function retryAfter(value, attempt, now = Date.now()) {
  const backoff = Math.min(2 ** attempt, MAX_WAIT);
  if (value === null || value === undefined) return backoff;
  const text = String(value).trim();
  const wait = /^\d+(\.\d+)?$/.test(text) ? Number(text) : (Date.parse(text) - now) / 1000;
  if (Number.isNaN(wait)) return backoff; // neither seconds nor an HTTP date
  if (wait > MAX_WAIT) return null;
  return Math.max(0, wait);
}

/**
 * `fetch` with up to `retries` more attempts after HTTP 429 or 503, each after the server's
 * Retry-After (see retryAfter); any other failure status throws at once, naming `what`.
 */
export async function request(url, init, what, { retries = 3, sleep = (s) => new Promise((r) => setTimeout(r, 1000 * s)) } = {}) {
  for (let attempt = 0; ; attempt++) {
    const r = await fetch(url, init);
    if (r.ok) return r.json();
    const wait = RETRY_STATUS.includes(r.status) ? retryAfter(r.headers?.get?.('retry-after'), attempt) : null;
    if (wait === null || attempt >= retries) {
      const tried = attempt ? ` (after ${attempt + 1} attempts)` : '';
      let detail = await r.text();
      try {
        detail = JSON.parse(detail).error ?? detail; // the service's {"error": "..."}
      } catch {
        // not JSON: the text as it came
      }
      const err = new Error(`${what}: ${r.status}${tried} ${detail}`);
      err.status = r.status;
      throw err;
    }
    await sleep(wait);
  }
}

/**
 * POST one report `body` (from makeReport). A request that got no HTTP answer (fetch rejected:
 * connection lost; the service may have stored it) is sent again as it was, same token and same
 * randomized report, up to `retries` more times (1, 2, 4 ... s apart): never a new randomization of
 * the same answers, which would cost the person epsilon a second time. A 409 (token already used)
 * after such an attempt, or for a body `sentBefore` without an answer, means an earlier attempt was
 * stored: {stored: 1}. When no attempt gets an answer the error has `pending: true`: send the same
 * body again later (the survey page does).
 */
export async function sendReport(url, body, { retries = 3, sleep = (s) => new Promise((r) => setTimeout(r, 1000 * s)), sentBefore = false } = {}) {
  const init = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
  let lost = null;
  for (let attempt = 0; attempt <= retries; attempt++) {
    if (attempt) await sleep(Math.min(2 ** (attempt - 1), MAX_WAIT));
    try {
      return await request(url, init, 'report', { retries, sleep });
    } catch (err) {
      if (err.status === undefined) { lost = err; continue; } // no HTTP answer: send the same body again
      if (err.status === 409 && (lost !== null || sentBefore)) return { stored: 1 };
      throw err;
    }
  }
  const err = new Error(`report: no answer after ${retries + 1} attempts (${lost && lost.message}); `
    + 'it may or may not be stored: send the same body again, never a new randomization of the same answers');
  err.pending = true;
  throw err;
}

/**
 * Reports this page has sent, by collection URL and answers: `pending` (no answer came back: the
 * same body is sent again by the next submit of those answers) or `refused` (the service answered
 * with an error other than 429 / 503: not stored, but the collector has seen the randomization, so
 * those answers are not randomized again). As DeviceClient.pending / .refused in Python.
 */
const SENT = new Map();

/**
 * Check the answers, enrol, randomize on this device, send. Only the randomized report leaves the device.
 * `options.retries` (default 3): attempts after HTTP 429 / 503, honouring Retry-After (at most MAX_WAIT s),
 * and after a report request that got no answer (the same body again: sendReport). One randomization
 * per answers and page: a later submit of the same answers after a lost answer sends the same body
 * again; after a refusal it throws (`refusedBefore: true`) without enrolling: a new randomization
 * would give the collector a second report of them, epsilon spent twice.
 */
export async function submit(baseUrl, name, answers, options = {}) {
  const api = `${baseUrl.replace(/\/$/, '')}/api/c/${encodeURIComponent(name)}`;
  const desc = await request(api, undefined, 'collection', options);
  checkAnswers(desc, answers); // before enrolling: no token spent on answers that cannot be sent
  checkDescription(desc); // nor on a description whose randomizers are weaker than its epsilon
  const filled = withMissing(desc, answers);
  const key = JSON.stringify([api, Object.keys(filled).sort().map((a) => [a, String(filled[a])])]);
  const before = SENT.get(key);
  if (before?.refused) {
    throw Object.assign(new Error(`report: not sent: the service refused a randomized report of these answers `
      + `before (${before.refused}); it has seen that report, so a new randomization would cost epsilon `
      + 'a second time'), { status: before.status, refusedBefore: true });
  }
  let body = before?.pending;
  if (body === undefined) {
    const enrol = await request(`${api}/enrol`, { method: 'POST' }, 'enrol', options);
    body = makeReport(desc, enrol, answers);
  }
  SENT.set(key, { pending: body });
  try {
    const out = await sendReport(`${api}/report`, body, { ...options, sentBefore: before !== undefined });
    SENT.delete(key);
    return out;
  } catch (err) {
    if (err.status !== undefined && !RETRY_STATUS.includes(err.status)) SENT.set(key, { refused: err.message, status: err.status });
    throw err;
  }
}
