// Regenerates, from the running Node's ICU:
//
// 1. tests/data/fingerprint/locale-compare.json — a corpus of folder-like
//    strings and the order Node's `a.localeCompare(b)` (default locale, no
//    options) sorts them into with Array.prototype.sort, exactly how
//    cowork-harness orders a session's `folders` for `sessionFingerprint`.
//    reel's test (src/js/collation.rs) reads it; Node is not needed
//    in CI.
// 2. src/js/han_radical_stroke.txt — every Unified_Ideograph in
//    Node's collation order (ICU's root collation sorts Han by radical and
//    stroke; ICU4X's compiled root data uses code-point "implicit" order
//    instead, so reel carries this order itself). One run of consecutive code
//    points per line, `START_HEX[ LENGTH]`, in collation order.
//
//   node tests/data/fingerprint/gen-locale-compare.mjs
//
// Both outputs are deterministic (seeded PRNG), so a rerun with the same
// Node/ICU reproduces them byte for byte.

import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../../../", import.meta.url));

const hand = [
  // empty, dots, path shapes
  "", ".", "..", "./", "../", "/", "~", "~/", "_", "-", " ",
  ".", "./skills", "../skills", "../skills/foo", "../../skills", "./skills/foo",
  "skills", "skills/", "skills/foo", "skills/foo/bar", "/abs/skills", "/abs/Skills",
  "~/work", "~/Work", "~work", "C:\\Users\\me", "c:/users/me", "\\\\server\\share",
  "skills-a", "skills_a", "skills.a", "skills a", "skills/a", "skills~a", "skills+a",
  "skills2", "skills10", "skills-2", "skills-10", "skills_2", "skills.2", "skills 2",
  // digits
  "0", "00", "01", "1", "10", "100", "2", "9", "a1", "a10", "a2", "a01", "1a", "1A",
  "\u0661", "\u00b2", "\u00bd", "\u2460", "\uff11", "\u0967",
  // case pairs
  "a", "A", "b", "B", "z", "Z", "ab", "aB", "Ab", "AB", "skills", "Skills", "SKILLS", "sKills",
  "README", "readme", "Readme", "ReadMe", "docs", "Docs", "DOCS",
  // accented Latin and letters with special primaries
  "e", "E", "\u00e9", "\u00c9", "\u00e8", "\u00ea", "\u00eb", "\u0113", "\u0117", "\u0119",
  "resume", "r\u00e9sum\u00e9", "R\u00e9sum\u00e9", "resum\u00e9", "r\u00e9sume", "RESUME",
  "cafe", "caf\u00e9", "Caf\u00e9", "CAF\u00c9", "cafes", "caf\u00e9s",
  "naive", "na\u00efve", "Na\u00efve", "n", "\u00f1", "\u00d1", "\u00f1and\u00fa", "nandu",
  "\u00df", "ss", "SS", "stra\u00dfe", "strasse", "Strasse", "\u1e9e",
  "\u00e6", "ae", "AE", "\u00c6", "af", "\u00f8", "o", "\u00d8", "\u00e5", "\u00c5", "aa",
  "\u00e4", "\u00f6", "\u00fc", "\u00c4", "\u00d6", "\u00dc", "\u0142", "l", "\u0141", "m",
  "\u0111", "\u00f0", "\u00fe", "th", "\u0131", "\u0130", "i", "I", "\u0153", "oe", "\u0152",
  "\u0149", "\u01c4", "\u01c5", "\u01c6", "dz", "\u02bc", "\u0292", "\u01b7", "\u0259", "\u018f",
  "\u00e7", "c", "\u010d", "\u0107", "\u010c", "d", "\u0161", "s", "\u017e", "z", "\u00fd", "y",
  "\u0151", "\u0171", "\u0103", "\u00e2", "\u00ee", "\u0219", "\u021b", "\u015f", "\u0163",
  "\u1ec7", "\u1ea1", "\u01a1", "\u01b0", "\ufb01", "fi", "\ufb00", "ff",
  // precomposed vs decomposed (canonically equivalent: localeCompare says 0)
  "e\u0301", "cafe\u0301", "re\u0301sume\u0301", "a\u0323\u0302", "a\u0302\u0323", "\u1ead",
  "\u1100\u1161", "\uac00", "A\u030a", "\u212b", "\u00c5", "\u2126", "\u03a9",
  // ignorables (compare equal to the string without them)
  "a\u00adb", "a\u200bb", "a\u200db", "a\u2060b", "a\u0001b", "a\u007fb", "ab",
  // whitespace
  " a", "a ", "a  b", "a\tb", "a\nb", "a\u00a0b", "a\u3000b", "a\u2003b", "\ta", "\u00a0a",
  // Greek, Cyrillic, other scripts
  "\u03b1", "\u0391", "\u03b2", "\u03ac", "\u044f", "\u042f", "\u0436", "\u0451", "\u0435", "\u0401",
  "\u0645\u0631\u062d\u0628\u0627", "\u05e9\u05dc\u05d5\u05dd", "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35",
  "\u0928\u092e\u0938\u094d\u0924\u0947", "\u10d0", "\u0561", "\u1200",
  // CJK, kana, width variants
  "\u4e2d\u6587", "\u65e5\u672c\u8a9e", "\ud55c\uad6d\uc5b4", "\u6f22\u5b57", "\u6c49\u5b57",
  "\u3072\u3089\u304c\u306a", "\u30ab\u30bf\u30ab\u30ca", "\uff76\uff80\uff76\uff85", "\uff41\uff42\uff43", "abc",
  "\u4e00", "\u4e8c", "\u4e09", "\u3042", "\u30a2", "\u3041", "\u30a1", "\u3400", "\u{20000}", "\u{2a6d6}",
  "\u3131", "\u1100",
  // emoji and symbols
  "\u{1f600}", "\u{1f600}x", "x\u{1f600}", "\u{1f44d}", "\u{1f44d}\u{1f3fd}", "\u{1f3f3}\ufe0f\u200d\u{1f308}",
  "\u2764", "\u2764\ufe0f", "\u{1f680} rocket", "a\u{1f600}b", "\u2603", "\u00a9", "\u00ae", "\u2122",
  "\u20ac", "$", "\u00a3", "\u00a5", "\u00a7", "\u00b6", "\u2020", "\u2022", "\u2026", "\u2013", "\u2014",
  "\u2018", "\u2019", "\u201c", "\u201d", "\u00ab", "\u00bb", "\u00b0", "\u00b1", "\u00d7", "\u00f7",
  "\u221e", "\u2192", "\u2190", "\u2605", "\u266a",
  // Han: ICU sorts it by radical and stroke, across the extension blocks
  "\u4e01", "\u4e03", "\u4e07", "\u5927", "\u5c0f", "\u5c71", "\u5ddd", "\u6728", "\u6797",
  "\u68ee", "\u6c34", "\u706b", "\u91d1", "\u571f", "\u4eba", "\u5165", "\u516b", "\u9f8d",
  "\u9f98", "\u9fa5", "\u9fff", "\u3401", "\u4db5", "\u{20001}", "\u{2a700}", "\u{2b740}",
  "\u{2b820}", "\u{2ceb0}", "\u{30000}", "\u{31350}", "\u{2ebf0}", "\ufa0e", "\ufa29",
  "\u4e00a", "a\u4e00", "a\u4e01", "a\u{20000}", "\u4e00\u4e01", "\u4e00\u{20000}",
  "\u4e00\u0301", "\u4e00 ", "\u4e00/docs", "docs/\u4e00", "\u6771\u4eac", "\u5317\u4eac",
  // compatibility forms of Han: canonical (equal) and compatibility (tertiary variants)
  "\uf900", "\u8c48", "\u{2f800}", "\u4e3d", "\u2f00", "\u3192", "\u3280", "\u3220",
  "\u{1f210}", "\u337b", "\u5e73\u6210", "\u3038", "\u5341", "\u32c0", "1\u6708", "\u33e0",
  "\u{1f240}", "\u32ff", "\u2e9f", "\u6bcd", "\u2ef3", "\u9f9f", "\u2e80", "\u2ff0",
  "\u2e81", "\u2e84", "\u4e59", "\u2e99", "\u6535", "\u{16ff2}", "\u513f", "\u{16ff3}",
  "\u2e80\u4e36", "\u4e36\u2e80", "\u4e36",
  "\u3005", "\u3006", "\u3007", "\u303b", "\u{16fe3}", "\u{17000}", "\u{1b170}", "\u{18b00}",
  // odd code points
  "\ufffd", "\ufeff", "\ue000", "\u{f0000}", "\u{10ffff}", "\uffff", "\u{10000}",
];

const punct = [..." !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"];
const fromPunct = [];
for (const p of punct) fromPunct.push("a" + p + "b", p + "x", "x" + p);

// Seeded PRNG (mulberry32) so the corpus and its input order are stable.
let seed = 0x5eed1234;
function rand() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (xs) => xs[Math.floor(rand() * xs.length)];

const prefixes = ["", "", "./", "../", "../../", "~/", "/", "/home/", "_", "."];
const words = ["skills", "Skills", "data", "Data", "docs", "r\u00e9sum\u00e9", "resume", "caf\u00e9",
  "\u00c9cole", "ecole", "\u00e9cole", "na\u00efve", "stra\u00dfe", "\u65e5\u672c", "\u{1f680}", "src",
  "SRC", "tmp", "t\u00e9st", "test", "Test", "a", "A", "\u00e5", "z", "\u00f8l", "ol", "x1", "x10", "x2"];
const seps = ["/", "-", "_", ".", " ", "~", "", "/", "+", "@"];
const generated = [];
for (let i = 0; i < 220; i++) {
  let s = pick(prefixes) + pick(words);
  const parts = Math.floor(rand() * 3);
  for (let j = 0; j < parts; j++) s += pick(seps) + pick(words);
  generated.push(s);
}

// Duplicates are kept on purpose: equal strings and canonically equivalent
// spellings must keep their input order (Array.prototype.sort is stable).
const hanWords = ["\u4e00", "\u4e01", "\u4e09", "\u4e2d", "\u65e5", "\u672c", "\u6f22",
  "\u6c49", "\u5b57", "\u{20000}", "\u3400", "\u{2a6d6}", "\u9f8d", "\u2f00", "\uf900",
  "\u3280", "\u5927", "\u6728", "\u6797", "\u68ee"];
for (let i = 0; i < 80; i++) {
  let s = pick(["", "", "./", "../", "~/"]) + pick(hanWords);
  const parts = Math.floor(rand() * 4);
  for (let j = 0; j < parts; j++) s += pick(["", "", "/", "-", " "]) + pick(rand() < 0.8 ? hanWords : words);
  generated.push(s);
}

const corpus = [...hand, ...fromPunct, ...generated];
// Fisher-Yates shuffle so the input is not already near sorted order.
for (let i = corpus.length - 1; i > 0; i--) {
  const j = Math.floor(rand() * (i + 1));
  [corpus[i], corpus[j]] = [corpus[j], corpus[i]];
}

const cmp = (a, b) => a.localeCompare(b);
const doc = {
  generator: "tests/data/fingerprint/gen-locale-compare.mjs",
  node: process.versions.node,
  icu: process.versions.icu,
  unicode: process.versions.unicode,
  collator: Intl.Collator().resolvedOptions(),
  input: corpus,
  sorted: [...corpus].sort(cmp),
  // The same sort from the reversed input: pairs that compare equal come out
  // in the opposite order, so a comparator that wrongly calls them equal (or
  // wrongly unequal) fails one of the two lists.
  sortedFromReversed: [...corpus].reverse().sort(cmp),
};
writeFileSync(repo + "tests/data/fingerprint/locale-compare.json", JSON.stringify(doc, null, 1) + "\n");

const unifiedIdeograph = /^\p{Unified_Ideograph}$/u;
const han = [];
for (let cp = 0; cp <= 0x10ffff; cp++) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  if (unifiedIdeograph.test(String.fromCodePoint(cp))) han.push(cp);
}
han.sort((x, y) => String.fromCodePoint(x).localeCompare(String.fromCodePoint(y)) || x - y);
const runs = [];
for (const cp of han) {
  const last = runs[runs.length - 1];
  if (last && cp === last[0] + last[1]) last[1]++;
  else runs.push([cp, 1]);
}
// Characters without a Han compatibility decomposition that ICU's root still
// weighs as a (tertiary) variant of one ideograph, e.g. U+2E80 CJK RADICAL
// REPEAT = U+4E36: found by a primary-strength binary search in `han`.
const primaryOnly = new Intl.Collator(undefined, { sensitivity: "base" });
const assigned = /^\p{Assigned}$/u;
const variants = [];
for (let cp = 0; cp <= 0x10ffff; cp++) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  const s = String.fromCodePoint(cp);
  if (!assigned.test(s) || unifiedIdeograph.test(s)) continue;
  if ([...s.normalize("NFKD")].some((c) => unifiedIdeograph.test(c))) continue;
  let lo = 0;
  let hi = han.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (primaryOnly.compare(String.fromCodePoint(han[mid]), s) < 0) lo = mid + 1;
    else hi = mid;
  }
  if (lo < han.length && primaryOnly.compare(String.fromCodePoint(han[lo]), s) === 0) {
    variants.push(`=${cp.toString(16)} ${han[lo].toString(16)}`);
  }
}
const header = [
  `# Unified_Ideograph code points in ICU root collation order (radical-stroke),`,
  `# one run of consecutive code points per line: START_HEX[ LENGTH]; then`,
  `# \`=VARIANT_HEX HAN_HEX\` for characters ICU weighs as a variant of one`,
  `# ideograph without a compatibility decomposition saying so.`,
  `# Generated by tests/data/fingerprint/gen-locale-compare.mjs with Node ${process.versions.node},`,
  `# ICU ${process.versions.icu}, Unicode ${process.versions.unicode}: ${han.length} ideographs, ${variants.length} variants.`,
];
const lines = runs.map(([start, n]) => start.toString(16) + (n > 1 ? " " + n : ""));
writeFileSync(
  repo + "src/js/han_radical_stroke.txt",
  [...header, ...lines, ...variants].join("\n") + "\n",
);
