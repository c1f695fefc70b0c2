// Regenerates es_cases.json: what JavaScript's RegExp answers for patterns and
// haystacks around astral characters (emoji). Run with node >= 18:
//   node tests/data/astral/gen_es_cases.js > tests/data/astral/es_cases.json
// Each result is [re.test(text), ranges]; `ranges` are reel's byte ranges: every match of the "g" form, its UTF-16
// offsets turned into UTF-8 byte offsets, an edge inside a surrogate pair
// widened to the whole character, overlapping ranges merged, a repeated
// empty range dropped (reel cannot return half a character).
"use strict";
const patterns = [
  "^.$", "^..$", ".{2}", "^.{3}$", "[^a]", "^[^a]$", "^[^a]{2}$", "\\S+", "^\\S$", "\\W", "\\D{2}",
  "[😀]", "^[😀]$", "^[😀]{2}$", "^😀{2}$", "😀+", "😀", "😃", "^[^😀]$", "[^😀]",
  "^\\uD83D\\uDE00$", "^[\\uD83D\\uDE00]$", "^[\\uD83D\\uDE00]{2}$", "^\\uD83D\\uDE00{2}$",
  "[\\uD800-\\uDBFF]", "[\\uDC00-\\uDFFF]+", "\\uDE00", "\\\\uD83D",
  "^(.)\\1$", "(.)(?=b)", "(?<=a).", "\\b.", ".\\B", "a.b", "a..b", "x.", ".$", "^.", "[😀-😂]",
  "(?<n>.)\\k<n>", "^[^]$", "^[^]{2}$", "[\\s\\S]", "\\w+", ".+", "^.*$", "x*", "^.x$",
  "[à-ÿ]", "\\xff", "[\\x00-\\xff]", "é", "𝒳", "^𝒳$", "^[𝒳]{2}$", "\\u{2}", "^\\u{1F600}$",
];
const texts = ["😀", "a😀b", "😀😀", "x😀", "é😀ÿ", "😀 \n😀", "AB😀cd", "𝒳y", "😀\u2028", "ab", "", "ÀŸ", "😀X", "uu", "😀ab", "a😀😀b"];
const flagsList = ["", "i", "u", "iu", "m", "s"];

function byteOffset(s, unit) {
  return Buffer.byteLength(s.slice(0, unit), "utf8");
}
function isLow(s, i) { const c = s.charCodeAt(i); return c >= 0xdc00 && c <= 0xdfff; }
function isHigh(s, i) { const c = s.charCodeAt(i); return c >= 0xd800 && c <= 0xdbff; }
// A unit offset inside a pair (after its high surrogate) → the pair's start / end.
function floorUnit(s, u) { return u > 0 && isHigh(s, u - 1) && isLow(s, u) ? u - 1 : u; }
function ceilUnit(s, u) { return u > 0 && isHigh(s, u - 1) && isLow(s, u) ? u + 1 : u; }

const cases = [];
for (const pattern of patterns) {
  for (const flags of flagsList) {
    let re;
    try {
      re = new RegExp(pattern, flags);
    } catch (e) {
      cases.push({ pattern, flags, error: true });
      continue;
    }
    const results = [];
    for (const text of texts) {
      const test = re.test(text);
      const ranges = [];
      for (const m of text.matchAll(new RegExp(pattern, flags + "g"))) {
        const s = floorUnit(text, m.index);
        const e = m[0].length === 0 ? s : ceilUnit(text, m.index + m[0].length);
        const r = [byteOffset(text, s), byteOffset(text, e)];
        const last = ranges[ranges.length - 1];
        if (last && r[0] < last[1]) last[1] = Math.max(last[1], r[1]);
        else if (last && r[0] === r[1] && last[0] === r[0] && last[1] === r[1]) continue;
        else ranges.push(r);
      }
      results.push([test, ranges]);
    }
    cases.push({ pattern, flags, results });
  }
}
// One case (pattern, flags) a line; `results[i]` is for `texts[i]`.
const lines = cases.map((c) => JSON.stringify(c));
process.stdout.write(`{"texts":${JSON.stringify(texts)},\n"cases":[\n${lines.join(",\n")}\n]}\n`);
