// Randomize many answers with Web Crypto randomness, for the statistical test in Python
// (tests/test_serve_device.py). Usage: node clients/js/tools/simulate.mjs DESCRIPTION.json JOB.json > OUT.json
// JOB: {"subset": i, "values": [flat joint index per device]} or {"answers": [{attr: label}]} (Bloom).
import { readFileSync } from 'node:fs';
import { webcrypto } from 'node:crypto';
import { WordSource, grr, unaryBits, packHex, olh, bloomReport } from '../lopub.js';
if (!globalThis.crypto) globalThis.crypto = webcrypto; // Node 18: Web Crypto not yet global

const desc = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const job = JSON.parse(readFileSync(process.argv[3], 'utf8'));
const src = new WordSource();
let out;
if (desc.kind === 'bloom') {
  out = job.answers.map((a) => bloomReport(desc.spec, a, src));
} else {
  const o = desc.subset_oracles[job.subset];
  const one = {
    grr: (v) => grr(v, o.k, o.p, src),
    oue: (v) => packHex(unaryBits(v, o.k, o.p, o.q, src)),
    olh: (v) => olh(v, o.g, o.p, src),
  }[o.oracle];
  out = job.values.map(one);
}
process.stdout.write(JSON.stringify(out));
