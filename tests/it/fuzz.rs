//! Fuzz targets (proptest, stable toolchain) for the YAML loaders users
//! hand-write: scenarios (`crate::scenario::Scenario::from_str`), sessions
//! (`crate::scenario::session::Session::parse`) and model scripts
//! (`crate::model::Script::parse`).
//!
//! Each loader gets arbitrary YAML-ish text, mutations of the real example
//! files (byte edits and YAML-significant snippets spliced in), and a few
//! fixed YAML bombs. The property: no panic, no hang, and every refusal names
//! the file it refused. The cassette loader, canonical serializer and event
//! parser have their own `fuzz_*` targets beside their tests; how to run them
//! all for longer is in docs/fuzzing.md.
//!
//! Deliberately not here: semantic checks of what loads (the loaders' own
//! tests own those).

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use reel::model::Script;
use reel::scenario::Scenario;
use reel::scenario::session::Session;

use crate::support;

/// The file name every fuzzed input pretends to come from.
const ORIGIN: &str = "fuzz-input.yaml";

/// A loader under fuzz: `Ok` or the refusal's message.
type Loader = fn(&str, &Path) -> Result<(), String>;

fn load_scenario(text: &str, origin: &Path) -> Result<(), String> {
    Scenario::from_str(origin, text)
        .map(|s| {
            std::hint::black_box(s.frozen.len());
        })
        .map_err(|e| e.to_string())
}

fn load_session(text: &str, origin: &Path) -> Result<(), String> {
    Session::parse(text, origin)
        .map(|s| {
            // Touch what callers read first from a loaded session.
            std::hint::black_box(s.skill_sources());
        })
        .map_err(|e| e.to_string())
}

fn load_script(text: &str, origin: &Path) -> Result<(), String> {
    Script::parse(text, origin)
        .map(|s| {
            std::hint::black_box(s.turns.len());
        })
        .map_err(|e| e.to_string())
}

/// Where fuzzed scenarios pretend to live: beside the real examples, so
/// their relative `session:` and skill paths resolve as the originals do.
fn scenario_origin() -> PathBuf {
    support::compat("examples/scenarios").join(ORIGIN)
}

/// Runs `load` on `text`: a panic fails the test (proptest reports the
/// minimal input); a refusal must name the file.
fn check(load: Loader, text: &str) -> Result<(), TestCaseError> {
    check_at(load, text, Path::new(ORIGIN))
}

fn check_at(load: Loader, text: &str, origin: &Path) -> Result<(), TestCaseError> {
    if let Err(msg) = load(text, origin) {
        prop_assert!(
            msg.contains(ORIGIN),
            "refusal does not name the file: {msg}"
        );
        prop_assert!(!msg.trim().is_empty());
    }
    Ok(())
}

/// Files of `dir` ending in `suffix`, sorted, as text.
fn seeds(dir: PathBuf, suffix: &str) -> Vec<(PathBuf, String)> {
    let mut out: Vec<(PathBuf, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no {suffix} seeds in {}", dir.display());
    out
}

fn scenario_seeds() -> &'static [(PathBuf, String)] {
    static SEEDS: std::sync::OnceLock<Vec<(PathBuf, String)>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut all = seeds(support::compat("examples/scenarios"), ".yaml");
        all.extend(seeds(
            support::compat("examples/scenarios/trigger-accuracy-sweep"),
            ".yaml",
        ));
        // reel's own protocol-tier examples (the model scripts beside them
        // are not scenarios).
        all.extend(
            seeds(support::repo().join("scenarios"), ".yaml")
                .into_iter()
                .filter(|(p, _)| !p.to_string_lossy().ends_with(".model.yaml")),
        );
        all
    })
}

fn session_seeds() -> &'static [(PathBuf, String)] {
    static SEEDS: std::sync::OnceLock<Vec<(PathBuf, String)>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(|| seeds(support::compat("examples/sessions"), ".yaml"))
}

fn script_seeds() -> &'static [(PathBuf, String)] {
    static SEEDS: std::sync::OnceLock<Vec<(PathBuf, String)>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(|| seeds(support::data("model"), ".model.yaml"))
}

/// Tokens that change how YAML reads what follows.
const SNIPPETS: &[&str] = &[
    ": ",
    "- ",
    "\n",
    "\n  ",
    "\n    - ",
    "{",
    "}",
    "[",
    "]",
    ",",
    "&a ",
    "*a",
    "<<: *a\n",
    "!!binary ",
    "!!str ",
    "!tag ",
    "? ",
    "|\n  ",
    ">-\n  ",
    "'",
    "\"",
    "\\u0000",
    "# ",
    "~",
    "null",
    "1e999",
    "-9223372036854775809",
    "18446744073709551616",
    "0x7f",
    ".nan",
    "-.inf",
    "true",
    "\t",
    "---\n",
    "...\n",
    "%YAML 1.1\n",
    "\u{feff}",
    "\u{0}",
    "é",
    "😀",
    "turns:",
    "blocks:",
    "text:",
    "tool:",
    "input:",
    "expect:",
    "model:",
    "folders:",
    "skills:",
    "plugins:",
    "from:",
    "mode:",
];

/// Applies `edits` to `text` (byte-wise; the result is read lossily as
/// UTF-8, like a loader reading an arbitrary file would have to).
fn mutate(text: &str, edits: &[(u8, prop::sample::Index, u8, prop::sample::Index)]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for (op, at, byte, pick) in edits {
        let i = if bytes.is_empty() {
            0
        } else {
            at.index(bytes.len())
        };
        match op % 6 {
            0 if !bytes.is_empty() => bytes[i] = *byte,
            1 => bytes.insert(i, *byte),
            2 if !bytes.is_empty() => {
                bytes.remove(i);
            }
            3 => bytes.truncate(i),
            4 => {
                let s = SNIPPETS[pick.index(SNIPPETS.len())].as_bytes();
                bytes.splice(i..i, s.iter().copied());
            }
            _ => {
                // Duplicate a line (repeated keys, extra items).
                let start = bytes[..i]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |p| p + 1);
                let end = bytes[i..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(bytes.len(), |p| i + p);
                let line: Vec<u8> = bytes[start..end].to_vec();
                bytes.splice(start..start, line.into_iter().chain([b'\n']));
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// YAML-ish text: indented `key: value` and `- item` lines built from the
/// seeds' own keys and values that stress the scalar resolver.
fn yamlish() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        prop::sample::select(vec![
            "model",
            "effort",
            "turns",
            "blocks",
            "text",
            "tool",
            "input",
            "expect",
            "usage",
            "overloaded",
            "id",
            "folders",
            "from",
            "mode",
            "skills",
            "local",
            "plugins",
            "uploads",
            "agent_max_turns",
            "permission_mode",
            "debug",
            "max_thinking_tokens",
            "prompt",
            "session",
            "assert",
            "answers",
        ])
        .prop_map(str::to_owned),
        "[a-z_]{1,12}",
    ];
    let value = prop_oneof![
        Just(String::new()),
        prop::sample::select(SNIPPETS.to_vec()).prop_map(str::to_owned),
        "[ -~]{0,24}",
        any::<i64>().prop_map(|n| n.to_string()),
        Just("[]".to_owned()),
        Just("{}".to_owned()),
        Just("{text: hi}".to_owned()),
        Just("[{tool: Bash, input: {command: ls}}]".to_owned()),
    ];
    prop::collection::vec((0usize..4, any::<bool>(), key, value), 0..24).prop_map(|lines| {
        lines
            .into_iter()
            .map(|(indent, item, k, v)| {
                format!(
                    "{}{}{k}: {v}\n",
                    "  ".repeat(indent),
                    if item { "- " } else { "" }
                )
            })
            .collect()
    })
}

fn edits() -> impl Strategy<Value = Vec<(u8, prop::sample::Index, u8, prop::sample::Index)>> {
    prop::collection::vec(
        (
            any::<u8>(),
            any::<prop::sample::Index>(),
            any::<u8>(),
            any::<prop::sample::Index>(),
        ),
        1..10,
    )
}

#[test]
fn fuzz_seeds_load_unmutated() {
    // The mutation targets start from valid files, or they fuzz nothing.
    // Scenarios: reel records at the protocol tier only, so the container
    // examples are refused (cleanly); the protocol ones load.
    let mut loaded = 0;
    for (path, text) in scenario_seeds() {
        match load_scenario(text, path) {
            Ok(()) => loaded += 1,
            Err(e) => assert!(e.contains("protocol tier"), "{e}"),
        }
    }
    assert!(
        loaded * 2 >= scenario_seeds().len(),
        "only {loaded} scenario seeds load"
    );
    for (path, text) in session_seeds() {
        load_session(text, path).unwrap_or_else(|e| panic!("{e}"));
    }
    for (path, text) in script_seeds() {
        // Some scripts are deliberately broken fixtures; all must at least
        // be refused cleanly, and most load.
        let _ = load_script(text, path);
    }
    let loaded = script_seeds()
        .iter()
        .filter(|(p, t)| load_script(t, p).is_ok())
        .count();
    assert!(
        loaded * 2 >= script_seeds().len(),
        "most model-script seeds must load"
    );
}

/// Inputs built to exhaust a naive YAML reader: each must be refused (or
/// read) promptly and without overflowing the stack.
#[test]
fn fuzz_yaml_bombs_are_refused_cleanly() {
    let deep_flow = format!("turns: {}{}", "[".repeat(20_000), "]".repeat(20_000));
    let deep_block: String = (0..5_000)
        .map(|i| format!("{}- \n", " ".repeat(i)))
        .collect();
    let mut laughs = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for (prev, name) in ["a", "b", "c", "d", "e", "f", "g", "h"]
        .windows(2)
        .map(|w| (w[0], w[1]))
    {
        laughs.push_str(&format!(
            "{name}: &{name} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
        ));
    }
    laughs.push_str("turns: *h\nfolders: *h\n");
    let long_key = format!("{}: 1\n", "k".repeat(1 << 20));
    let many_keys: String = (0..20_000).map(|i| format!("k{i}: {i}\n")).collect();
    let nul = "model: \0\nturns: []\n".to_owned();
    for (name, text) in [
        ("deep flow nesting", deep_flow),
        ("deep block nesting", deep_block),
        ("billion laughs", laughs),
        ("1 MiB key", long_key),
        ("20,000 keys", many_keys),
        ("NUL in a scalar", nul),
    ] {
        for (loader, load, origin) in [
            ("scenario", load_scenario as Loader, scenario_origin()),
            ("session", load_session, PathBuf::from(ORIGIN)),
            ("script", load_script, PathBuf::from(ORIGIN)),
        ] {
            let t = std::time::Instant::now();
            if let Err(msg) = load(&text, &origin) {
                assert!(msg.contains(ORIGIN), "{loader} / {name}: {msg}");
            }
            // Not a speed assertion: a generous bound that only catches a
            // hang or an exponential blow-up.
            assert!(
                t.elapsed().as_secs() < 20,
                "{loader} / {name}: took {:?}",
                t.elapsed()
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn fuzz_scenario_arbitrary_text(text in "\\PC{0,300}") {
        check_at(load_scenario, &text, &scenario_origin())?;
    }

    #[test]
    fn fuzz_scenario_yamlish_text(text in yamlish()) {
        check_at(load_scenario, &format!("prompt: go\n{text}"), &scenario_origin())?;
    }

    #[test]
    fn fuzz_scenario_mutations_of_examples(which in any::<prop::sample::Index>(), edits in edits()) {
        let seeds = scenario_seeds();
        let (path, text) = &seeds[which.index(seeds.len())];
        check_at(load_scenario, &mutate(text, &edits), &path.with_file_name(ORIGIN))?;
    }

    #[test]
    fn fuzz_session_arbitrary_text(text in "\\PC{0,300}") {
        check(load_session, &text)?;
    }

    #[test]
    fn fuzz_session_yamlish_text(text in yamlish()) {
        check(load_session, &text)?;
    }

    #[test]
    fn fuzz_session_mutations_of_examples(which in any::<prop::sample::Index>(), edits in edits()) {
        let seeds = session_seeds();
        let (_, text) = &seeds[which.index(seeds.len())];
        check(load_session, &mutate(text, &edits))?;
    }

    #[test]
    fn fuzz_model_script_arbitrary_text(text in "\\PC{0,300}") {
        check(load_script, &text)?;
    }

    #[test]
    fn fuzz_model_script_yamlish_text(text in yamlish()) {
        check(load_script, &format!("turns:\n{text}"))?;
    }

    #[test]
    fn fuzz_model_script_mutations_of_examples(which in any::<prop::sample::Index>(), edits in edits()) {
        let seeds = script_seeds();
        let (_, text) = &seeds[which.index(seeds.len())];
        check(load_script, &mutate(text, &edits))?;
    }
}
