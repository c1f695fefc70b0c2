//! Reads every input with serde_yaml 0.9 (old) and serde_yaml_ng 0.10 (new)
//! and prints each difference; exits 1 when there is any. Arguments: files
//! or directories (searched for `*.yaml` / `*.yml`).

use std::path::{Path, PathBuf};

/// What one parser made of one text, as comparable strings.
#[derive(PartialEq, Debug)]
struct Reading {
    /// `from_str::<serde_json::Value>`: the value reel's scenario, lint and
    /// discovery paths use, or the error's text.
    as_json: Result<String, String>,
    /// `from_str::<Value>` (the crate's own tree, used by sessions), Debug.
    as_yaml: Result<String, String>,
    /// `to_string` of the crate's own tree (scaffold, scripts, assertions).
    reserialised: Option<Result<String, String>>,
}

fn old(text: &str) -> Reading {
    let as_yaml = serde_yaml::from_str::<serde_yaml::Value>(text);
    Reading {
        as_json: serde_yaml::from_str::<serde_json::Value>(text)
            .map(|v| v.to_string())
            .map_err(|e| e.to_string()),
        reserialised: as_yaml
            .as_ref()
            .ok()
            .map(|v| serde_yaml::to_string(v).map_err(|e| e.to_string())),
        as_yaml: as_yaml
            .map(|v| format!("{v:?}"))
            .map_err(|e| e.to_string()),
    }
}

fn new(text: &str) -> Reading {
    let as_yaml = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text);
    Reading {
        as_json: serde_yaml_ng::from_str::<serde_json::Value>(text)
            .map(|v| v.to_string())
            .map_err(|e| e.to_string()),
        reserialised: as_yaml
            .as_ref()
            .ok()
            .map(|v| serde_yaml_ng::to_string(v).map_err(|e| e.to_string())),
        as_yaml: as_yaml
            .map(|v| format!("{v:?}"))
            .map_err(|e| e.to_string()),
    }
}

/// The fuzz targets' YAML-significant snippets (tests/it/fuzz.rs).
const SNIPPETS: &[&str] = &[
    ": ", "- ", "\n", "\n  ", "\n    - ", "{", "}", "[", "]", ",", "&a ", "*a", "<<: *a\n",
    "!!binary ", "!!str ", "!tag ", "? ", "|\n  ", ">-\n  ", "'", "\"", "\\u0000", "# ", "~",
    "null", "1e999", "-9223372036854775809", "18446744073709551616", "0x7f", ".nan", "-.inf",
    "true", "\t", "---\n", "...\n", "%YAML 1.1\n", "\u{feff}", "\u{0}", "é", "😀", "turns:",
    "blocks:", "text:", "tool:", "input:", "expect:", "model:", "folders:", "skills:",
    "plugins:", "from:", "mode:",
];

/// xorshift64*, as reel's tests and benches seed theirs.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1) as u64) as usize
    }
}

/// `n` mutations of `text`, each one to four byte edits or snippet
/// splices, read lossily as UTF-8 (as the fuzz targets do).
fn mutations(text: &str, n: usize, rng: &mut Rng) -> Vec<String> {
    (0..n)
        .map(|_| {
            let mut b = text.as_bytes().to_vec();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(b.len() + 1).min(b.len());
                match rng.below(5) {
                    0 if i < b.len() => b[i] = rng.below(256) as u8,
                    1 => b.insert(i, rng.below(256) as u8),
                    2 if i < b.len() => {
                        b.remove(i);
                    }
                    3 => b.truncate(i),
                    _ => {
                        let s = SNIPPETS[rng.below(SNIPPETS.len())].as_bytes();
                        b.splice(i..i, s.iter().copied());
                    }
                }
            }
            String::from_utf8_lossy(&b).into_owned()
        })
        .collect()
}

/// The fuzz targets' bombs (tests/it/fuzz.rs `fuzz_yaml_bombs_are_refused_cleanly`).
fn bombs() -> Vec<(String, String)> {
    let mut laughs = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for w in ["a", "b", "c", "d", "e", "f", "g", "h"].windows(2) {
        let (prev, name) = (w[0], w[1]);
        laughs.push_str(&format!(
            "{name}: &{name} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
        ));
    }
    laughs.push_str("turns: *h\nfolders: *h\n");
    vec![
        ("deep flow nesting".into(), format!("turns: {}{}", "[".repeat(20_000), "]".repeat(20_000))),
        ("deep block nesting".into(), (0..5_000).map(|i| format!("{}- \n", " ".repeat(i))).collect()),
        ("billion laughs".into(), laughs),
        ("1 MiB key".into(), format!("{}: 1\n", "k".repeat(1 << 20))),
        ("20,000 keys".into(), (0..20_000).map(|i| format!("k{i}: {i}\n")).collect()),
        ("NUL in a scalar".into(), "model: \0\nturns: []\n".into()),
    ]
}

fn collect(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for e in entries {
            collect(&e, out);
        }
    } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
        out.push(p.to_path_buf());
    }
}

fn main() {
    let per_file: usize = std::env::var("YAML_PARITY_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let mut files = Vec::new();
    for arg in std::env::args().skip(1) {
        collect(Path::new(&arg), &mut files);
    }
    let mut inputs: Vec<(String, String)> = Vec::new();
    let mut rng = Rng(0x5eed_9a71 | 1);
    for f in &files {
        let text = String::from_utf8_lossy(&std::fs::read(f).unwrap()).into_owned();
        for (i, m) in mutations(&text, per_file, &mut rng).into_iter().enumerate() {
            inputs.push((format!("{} (mutation {i})", f.display()), m));
        }
        inputs.push((f.display().to_string(), text));
    }
    inputs.extend(bombs());
    let (mut differ, mut accepted, mut refused) = (0, 0, 0);
    for (name, text) in &inputs {
        let (a, b) = (old(text), new(text));
        if a.as_json.is_ok() {
            accepted += 1;
        } else {
            refused += 1;
        }
        if a != b {
            differ += 1;
            println!("DIFFERS {name}\n  serde_yaml:    {a:?}\n  serde_yaml_ng: {b:?}");
        }
    }
    println!(
        "yaml parity: {} files, {} inputs ({} read, {} refused by serde_yaml), {} differences",
        files.len(),
        inputs.len(),
        accepted,
        refused,
        differ
    );
    std::process::exit(if differ == 0 { 0 } else { 1 });
}
