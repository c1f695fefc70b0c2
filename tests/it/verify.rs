//! `reel verify-cassettes`: the original's cases (tests/compat/expected,
//! rebuilt as capture.sh builds them), a planted-secrets corpus that must be
//! fully caught, and a near-miss corpus that must stay clean.

use serde_json::{Map, Value, json};

use crate::support::{self, CassetteDoc, Failures, Fixture, Rng, Run, RunExt};

use crate::support::assert_schema;
use crate::support::compat::{Case, cases, expected, run_case};
use crate::support::fixture::PDF;

fn strs(v: &Value, k: &str) -> Vec<String> {
    v[k].as_array()
        .map(|a| {
            a.iter()
                .map(|x| x.as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// cowork-harness's `unscanned` finding for an upload (whose body is never
/// committed): reel's documented departure (README) drops it.
const UPLOAD_UNSCANNED: &str = "(body not committed — too large or unreadable)";

fn findings(v: &Value) -> Vec<(String, String, String)> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            !(f["sample"] == UPLOAD_UNSCANNED
                && f["where"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("artifact uploads/"))
        })
        // reel merges a repeated finding (README departure): expanded back
        // into one row per location, compared as a sorted list.
        .flat_map(|f| {
            let at = match f["locations"].as_array() {
                Some(all) => all.iter().map(|l| l.as_str().unwrap().to_owned()).collect(),
                None => vec![f["where"].as_str().unwrap().to_owned()],
            };
            at.into_iter().map(move |l| {
                (
                    l,
                    f["cls"].as_str().unwrap().to_owned(),
                    f["sample"].as_str().unwrap().to_owned(),
                )
            })
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The privacy half of a JSON case: findings, version, errors, privacyScanned.
fn compare_privacy(case: &str, exp: &Value, got: &Value) {
    let (e, g) = (
        exp["results"].as_array().unwrap(),
        got["results"].as_array().unwrap(),
    );
    assert_eq!(e.len(), g.len(), "{case}: result count");
    for (e, g) in e.iter().zip(g) {
        assert_eq!(e["file"], g["file"], "{case}");
        assert_eq!(
            findings(e),
            findings(g),
            "{case}: findings of {}",
            e["file"]
        );
        assert_eq!(strs(e, "version"), strs(g, "version"), "{case}");
        assert_eq!(e["privacyScanned"], g["privacyScanned"], "{case}");
        assert_eq!(
            e.get("error").is_some(),
            g.get("error").is_some(),
            "{case}: error presence"
        );
        if let Some(err) = g.get("error") {
            assert!(
                err.as_str()
                    .unwrap()
                    .starts_with("unreadable / invalid cassette JSON:"),
                "{err}"
            );
        }
    }
    assert_eq!(exp["coverage"], got["coverage"], "{case}");
}

/// Everything: exit code, every bucket.
fn compare_full(case: &Case, got: &Run) {
    assert_eq!(
        got.code, case.rc,
        "{}: exit code\nstderr:\n{}",
        case.name, got.stderr
    );
    let exp_out = expected(&case.name, "stdout");
    if exp_out.trim_start().starts_with('{') {
        let e: Value = serde_json::from_str(&exp_out).unwrap();
        let g: Value = serde_json::from_str(&got.stdout).unwrap();
        compare_privacy(&case.name, &e, &g);
        assert_eq!(e["ok"], g["ok"], "{}", case.name);
        for (er, gr) in e["results"]
            .as_array()
            .unwrap()
            .iter()
            .zip(g["results"].as_array().unwrap())
        {
            for k in ["staleness", "unverifiable", "notes", "scenarioDrift"] {
                assert_eq!(
                    strs(er, k),
                    strs(gr, k),
                    "{}: {k} of {}",
                    case.name,
                    er["file"]
                );
            }
        }
    } else {
        // Text: every report row (✗/·/✓ and the class tally) in order.
        let rows = |s: &str| -> Vec<String> {
            s.lines()
                .filter(|l| {
                    ["✗ ", "· ", "✓ ", "findings by class"]
                        .iter()
                        .any(|p| l.starts_with(p))
                })
                .filter(|l| !l.contains("[error]"))
                .filter(|l| {
                    !(l.contains(UPLOAD_UNSCANNED) && l.contains("artifact uploads/"))
                        && *l != "findings by class: unscanned 1"
                })
                .map(str::to_owned)
                .collect()
        };
        assert_eq!(
            rows(&expected(&case.name, "stderr")),
            rows(&got.stderr),
            "{}",
            case.name
        );
    }
}

// ------------------------------------------------------------ compat cases

#[test]
fn compat_privacy_half_matches_for_every_json_case() {
    let fx = Fixture::capture_layout();
    let mut failures = Failures::new();
    let mut n = 0;
    for case in cases("verify-")
        .iter()
        .filter(|c| c.name.ends_with("-json"))
    {
        failures.case(&case.name, || {
            let got = run_case(&fx, case);
            let exp: Value = serde_json::from_str(&expected(&case.name, "stdout")).unwrap();
            let g: Value = serde_json::from_str(&got.stdout).unwrap_or_else(|e| {
                panic!(
                    "{}: stdout is not JSON ({e}): {}\n{}",
                    case.name, got.stdout, got.stderr
                )
            });
            compare_privacy(&case.name, &exp, &g);
            assert_schema("verify-cassettes.json", &g);
        });
        n += 1;
    }
    failures.assert_none(n);
    assert!(n >= 6, "only {n} JSON cases");
}

#[test]
fn compat_usage_cases() {
    let fx = Fixture::capture_layout();
    let mut failures = Failures::new();
    let names = [
        "verify-empty-dir",
        "verify-empty-dir-allow-empty",
        "verify-noargs",
    ];
    for name in names {
        failures.case(name, || {
            let case = cases(name).into_iter().find(|c| c.name == name).unwrap();
            let got = run_case(&fx, &case);
            assert_eq!(got.code, case.rc, "{name}: {}", got.stderr);
        });
    }
    failures.assert_none(names.len());
    let case = cases("verify-empty-dir-allow-empty").remove(0);
    let got = run_case(&fx, &case);
    assert_eq!(got.stderr, expected(&case.name, "stderr"));
}

#[test]
fn compat_every_verify_case_matches_fully() {
    let fx = Fixture::capture_layout();
    let mut failures = Failures::new();
    let cases = cases("verify-");
    for case in &cases {
        failures.case(&case.name, || compare_full(case, &run_case(&fx, case)));
    }
    failures.assert_none(cases.len());
}

#[test]
fn session_refused_for_a_directory_and_both_skips_refused() {
    let fx = Fixture::capture_layout();
    let out = support::reel()
        .args([
            "verify-cassettes",
            "examples/replays/",
            "--session",
            "examples/sessions/default.yaml",
        ])
        .current_dir(fx.peer())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not valid for a directory target"));
    let out = support::reel()
        .args([
            "verify-cassettes",
            PDF,
            "--skip-privacy",
            "--skip-staleness",
        ])
        .current_dir(fx.peer())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = support::reel()
        .args(["verify-cassettes", PDF, "--allow", "("])
        .current_dir(fx.peer())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--allow: invalid regex"));
}

// ------------------------------------------------------------ corpora

/// Synthetic-secret filler over the kit's seeded generator.
struct Gen(Rng);
impl Gen {
    fn from(&mut self, alphabet: &str, n: usize) -> String {
        self.0.pick(alphabet, n)
    }
    fn alnum(&mut self, n: usize) -> String {
        // Guarantee digits and both cases so value checks see a real token.
        let mut s = self.from(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
            n.saturating_sub(3),
        );
        s.push_str("a7Q");
        s
    }
    fn hex(&mut self, n: usize) -> String {
        self.from("0123456789abcdef", n)
    }
    fn upper(&mut self, n: usize) -> String {
        self.from("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", n)
    }
}

/// `(expected kind, text to plant)`: at least 50 distinct kinds.
fn planted() -> Vec<(&'static str, String)> {
    let mut g = Gen(Rng::new(0x9e3779b97f4a7c15));
    let b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
    vec![
        ("email", "reach jane.doe@acme-corp.com today".into()),
        ("currency", "raised $4.5M in the seed".into()),
        ("domain", "see acme-corp.io for details".into()),
        ("path", "saved to /Users/janedoe/Documents/plan.txt".into()),
        ("machine-inventory", "Available applications on this machine: AppOne, AppTwo".into()),
        ("anthropic-api-key", format!("key sk-ant-api03-{}AA", g.from(url, 93))),
        ("anthropic-oauth-token", format!("sk-ant-oat01-{}", g.from(url, 80))),
        ("openai-api-key", format!("OPENAI=sk-proj-{}", g.alnum(48))),
        ("huggingface-token", format!("hf_{}", g.alnum(34))),
        ("aws-access-key-id", format!("id AKIA{} end", g.upper(16))),
        ("aws-secret-access-key", format!("aws_secret_access_key = {}", g.from(b64, 37) + "a7Q")),
        ("gcp-api-key", format!("AIza{}", g.from(url, 35))),
        ("gcp-oauth-client-secret", format!("GOCSPX-{}", g.from(url, 28))),
        ("gcp-oauth-access-token", format!("ya29.{}", g.from(url, 60))),
        ("gcp-service-account-key", format!("{{\"private_key_id\": \"{}\"}}", g.hex(40))),
        ("azure-storage-key", format!("AccountKey={}==;", g.from(b64, 86))),
        ("azure-sas-token", format!("https://acct.blob.core.windows.net/c?sv=2022-11-02&ss=b&sig={}", g.from(b64, 44))),
        ("azure-ad-client-secret", format!(" Ab18Q~{} ", g.from(url, 34))),
        ("digitalocean-token", format!("dop_v1_{}", g.hex(64))),
        ("supabase-token", format!("sbp_{}", g.hex(40))),
        ("hashicorp-vault-token", format!("VAULT hvs.{}", g.alnum(30))),
        ("databricks-token", format!("dapi{}", g.hex(32))),
        ("github-token", format!("ghp_{}", g.alnum(36))),
        ("github-fine-grained-token", format!("github_pat_{}_{}", g.alnum(22), g.alnum(59))),
        ("gitlab-token", format!("glpat-{}", g.from(url, 20))),
        ("atlassian-api-token", format!("ATATT3{}", g.from(url, 60))),
        ("slack-token", format!("xoxb-123456789012-1234567890123-{}", g.alnum(24))),
        ("slack-app-token", format!("xapp-1-A0123ABCDEF-1234567890123-{}", g.hex(64))),
        ("slack-webhook", format!("https://hooks.slack.com/services/T01ABCDEF/B02GHIJKL/{}", g.alnum(24))),
        ("discord-webhook", format!("https://discord.com/api/webhooks/123456789012345678/{}", g.from(url, 68))),
        ("telegram-bot-token", format!("bot 123456789:AA{} ", g.from(url, 33))),
        ("sendgrid-api-key", format!("SG.{}.{}", g.from(url, 22), g.from(url, 43))),
        ("stripe-secret-key", format!("sk_live_{}", g.alnum(24))),
        ("stripe-webhook-secret", format!("whsec_{}", g.alnum(32))),
        ("twilio-account-sid", format!("sid AC{} ", g.hex(32))),
        ("twilio-api-key", format!("key SK{} ", g.hex(32))),
        ("square-token", format!("sq0csp-{}", g.from(url, 43))),
        ("shopify-token", format!("shpat_{}", g.hex(32))),
        ("npm-token", format!("//registry.npmjs.org/:_authToken=npm_{}", g.alnum(36))),
        ("pypi-token", format!("pypi-AgEIcHlwaS5vcmc{}", g.from(url, 60))),
        ("postman-api-key", format!("PMAK-{}-{}", g.hex(24), g.hex(34))),
        ("linear-api-key", format!("lin_api_{}", g.alnum(40))),
        ("notion-token", format!("NOTION secret_{} ", g.alnum(43))),
        ("grafana-token", format!("glsa_{}_{}", g.alnum(32), g.hex(8))),
        ("sentry-dsn", format!("https://{}@o123456.ingest.sentry.io/4505", g.hex(32))),
        ("age-secret-key", format!("AGE-SECRET-KEY-1{}", g.upper(58))),
        ("jwt", "tok eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U".into()),
        ("private-key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow...".into()),
        ("putty-private-key", "PuTTY-User-Key-File-3: ssh-ed25519".into()),
        ("bearer-token", format!("Authorization: Bearer {}", g.alnum(40))),
        ("basic-auth-header", "Authorization: Basic dXNlcjpodW50ZXIyMjIy".into()),
        ("url-credentials", "postgres://admin:S3cr3tP4ss@db.acme-prod.io:5432/app".into()),
        ("password-assignment", "db_password=Tr0ub4dor9".into()),
        ("high-entropy-secret", format!("session_token: {}", g.alnum(32))),
        ("phone-international", "call +44 20 7946 0958 now".into()),
        ("phone-north-america", "call (415) 555-2671 now".into()),
        ("payment-card", "card 4111 1111 1111 1111 exp".into()),
        ("iban", "IBAN DE89 3704 0044 0532 0130 00 thanks".into()),
        ("us-ssn", "SSN 078-05-1120 on file".into()),
        ("uk-national-insurance-number", "NINO JG 10 37 26 A".into()),
        ("canada-sin", "SIN 130 692 544 ok".into()),
        ("currency-symbol-amount", "budget €1.250.000 total".into()),
        ("currency-amount-suffix", "fee 1,500 EUR due".into()),
        ("currency-code-amount", "pay USD 2,400 now".into()),
        ("private-ip", "host at 192.168.1.23 responded".into()),
        ("mac-address", "hw 3c:22:fb:8a:11:7e seen".into()),
        ("local-hostname", "ssh janes-imac.local please".into()),
        ("windows-hostname", "on DESKTOP-7KQ2M9X today".into()),
        ("mac-hostname", "from Janes-MacBook-Pro today".into()),
        ("windows-home-path", r"open C:\Users\jdoe\Desktop\x.txt".into()),
        ("home-path-url", "see file:///Users/jdoe/report.pdf".into()),
    ]
}

/// A cassette carrying `items`, spread over every surface kind; returns
/// the doc and, per item, the location prefix it must be reported at.
fn corpus_cassette(items: &[(&'static str, String)]) -> (Map<String, Value>, Vec<String>) {
    use base64::Engine;
    let mut events = vec![];
    let mut control = vec![];
    let mut artifacts = vec![];
    let mut extra = Map::new();
    let mut answers = vec![];
    let mut asserts = vec![];
    let mut prompt = String::from("Summarise the report.\n");
    let mut wheres = vec![];
    for (i, (_, text)) in items.iter().enumerate() {
        let w = match i % 8 {
            0 => {
                events.push(json!({"type":"assistant","message":{"content":[{"type":"text","text":format!("note: {text}")}]}}).to_string());
                format!("events[{}]", events.len() - 1)
            }
            1 => {
                events.push(json!({"type":"user","message":{"content":[{"type":"tool_result","content":format!("line one\n{text}\nline three")}]}}).to_string());
                format!("events[{}]", events.len() - 1)
            }
            2 => {
                control.push(json!({"type":"control_response","response":{"subtype":"success","request_id":format!("r{i}"),"response":{"behavior":"allow","updatedInput":{"answers":{"q":text}}}}}).to_string());
                format!("controlOut[{}]", control.len() - 1)
            }
            3 => {
                let p = format!("outputs/doc{i}.md");
                artifacts.push(json!({"path":p,"bytes":text.len(),"sha256":"0","body":format!("# Doc\n\n{text}\n")}));
                format!("artifact {p}")
            }
            4 => {
                let p = format!("outputs/data{i}.txt");
                let b = base64::engine::general_purpose::STANDARD.encode(format!("row\n{text}\n"));
                artifacts.push(
                    json!({"path":p,"bytes":text.len(),"sha256":"0","body":b,"encoding":"base64"}),
                );
                format!("artifact {p}")
            }
            5 => {
                prompt.push_str(&format!("Context: {text}\n"));
                "scenario.prompt".into()
            }
            6 => {
                answers.push(json!({"when_question":"which account","choose":text}));
                "scenario.answers".into()
            }
            _ => {
                if i % 16 == 7 {
                    asserts.push(json!({"transcript_contains": text}));
                    "scenario.assert".into()
                } else {
                    extra.insert(format!("note{i}"), json!(text));
                    format!("scenario.note{i}")
                }
            }
        };
        wheres.push(w);
    }
    let mut scenario = json!({"name":"corpus","session":"../sessions/none.yaml","fidelity":"container","prompt":prompt,"answers":answers,"assert":asserts});
    scenario.as_object_mut().unwrap().extend(extra);
    let doc = json!({
        "$schema":"https://raw.githubusercontent.com/yaniv-golan/cowork-harness/main/schema/cassette.v12.json",
        "cassetteVersion":12,"scenario":scenario,"events":events,"controlOut":control,
        "effectiveFidelity":"container","artifacts":artifacts
    });
    (doc.as_object().unwrap().clone(), wheres)
}

#[test]
fn planted_corpus_is_fully_caught() {
    let items = planted();
    let kinds: std::collections::BTreeSet<_> = items.iter().map(|(k, _)| *k).collect();
    assert!(kinds.len() >= 50, "only {} distinct kinds", kinds.len());
    let (doc, wheres) = corpus_cassette(&items);
    let found = reel::verify::scan::scan_document(&doc, &Default::default()).unwrap();
    let mut missed = vec![];
    for ((kind, text), w) in items.iter().zip(&wheres) {
        if !found.iter().any(|f| f.kind == *kind && f.location == *w) {
            missed.push(format!("{kind} at {w}: {text}"));
        }
    }
    assert!(
        missed.is_empty(),
        "missed {} of {}:\n{}",
        missed.len(),
        items.len(),
        missed.join("\n")
    );
    // Masking: no secret or personal value is printed whole.
    for f in found
        .iter()
        .filter(|f| matches!(f.cls.as_str(), "secret" | "personal"))
    {
        for (_, text) in &items {
            let longest = text
                .split([' ', '=', ':', '\n'])
                .max_by_key(|t| t.len())
                .unwrap_or("");
            if longest.len() >= 12 {
                assert!(
                    !f.sample.contains(longest),
                    "{} printed unmasked: {}",
                    f.kind,
                    f.sample
                );
            }
        }
    }
}

#[test]
fn planted_corpus_fails_the_gate_with_masked_findings_in_valid_json() {
    let (doc, _) = corpus_cassette(&planted());
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("corpus.cassette.json");
    std::fs::write(&f, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let out = support::reel()
        .args([
            "verify-cassettes",
            f.to_str().unwrap(),
            "--skip-staleness",
            "--output-format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_schema("verify-cassettes.json", &v);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for (kind, text) in planted() {
        let class = reel::verify::detect::DETECTORS
            .iter()
            .find(|d| d.kind == kind)
            .unwrap()
            .class;
        if class.shows_sample() {
            continue;
        }
        // The value part: the longest token of the planted text.
        let value = text
            .split([' ', '=', '\n'])
            .max_by_key(|t| t.len())
            .unwrap();
        if value.len() >= 12 {
            assert!(!stdout.contains(value), "{kind} printed unmasked: {value}");
        }
    }
    assert!(
        !stdout.contains("4111 1111 1111 1111"),
        "a card number escaped masking"
    );
    // The text report names file, location and field.
    let out = support::reel()
        .args(["verify-cassettes", f.to_str().unwrap(), "--skip-staleness"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("[secret github-token] events[") || text.contains("[secret "),
        "{text}"
    );
    assert!(text.contains("$.message.content[0]"), "{text}");
}

fn near_misses() -> Vec<String> {
    [
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "commit a94a8fe5ccb19ba61c4c0873d391e987982fbbd3 merged",
        "cache_key: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "request 550e8400-e29b-41d4-a716-446655440000 done",
        "session_id=3f2a9c1e-7b4d-4e8a-9c1f-2d3e4f5a6b7c",
        "curl -H \"Authorization: Bearer $TOKEN\" https://api.example.com/v1",
        "Authorization: Bearer ${API_TOKEN}",
        "Authorization: Bearer <token>",
        "Authorization: Bearer YOUR_TOKEN_HERE",
        "export ANTHROPIC_API_KEY=",
        "api_key: ${OPENAI_API_KEY}",
        "password: required",
        "{\"password\": null}",
        "PASSWORD_FIELD and DB_PASSWORD_ENV",
        "token = os.environ['GITHUB_TOKEN']",
        "secret_key = settings.SECRET_KEY",
        "set password=$DB_PASSWORD",
        "there are 1234567890 rows and 42 columns, pi is 3.14159",
        "epoch 1732950000 and 17329500001234 ms",
        "write to user@example.com or admin@example.org",
        "docs at https://example.com/guide and www.example.net",
        "at 2026-11-30T06:00:17.123Z and 2026-11-30 06:00:17+00:00, 12:30:45",
        "version 1.34493.1 and v2.0.0 and 10.2",
        "keys look like sk- or ghp_ or AKIA followed by characters",
        "run /opt/cowork/agent in /sessions/abc/mnt/outputs then outputs/report.md",
        "listen on 127.0.0.1:8080 and 0.0.0.0",
        "the README.md and main.rs and config.yaml files",
        "count 10 items at 25% for 3 days",
        "order #12345 ref 2024-001-0042",
        "ids 00000000-0000-0000-0000-000000000000",
        "skill-hash b760ea90682777367fbd44d866ea66d316452da1abb18bf8cb61f1cec8e67806",
        "base64 aGVsbG8gd29ybGQ= means hello world",
        "see the Authorization header (Bearer token) docs",
        "the token: field holds the value",
        "regex ^[a-z]+$ matches",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn near_miss_corpus_raises_no_finding() {
    let items: Vec<(&'static str, String)> =
        near_misses().into_iter().map(|s| ("none", s)).collect();
    let (doc, _) = corpus_cassette(&items);
    let found = reel::verify::scan::scan_document(&doc, &Default::default()).unwrap();
    assert!(
        found.is_empty(),
        "false positives:\n{}",
        found
            .iter()
            .map(|f| format!(
                "{} {} {} — {}",
                f.kind,
                f.location,
                f.field.as_deref().unwrap_or(""),
                f.sample
            ))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// A text the recording repeats is one finding with its count and every
/// location, in JSON (schema-valid) and in the text report.
#[test]
fn a_repeated_finding_is_one_with_its_count_and_locations() {
    let repo = support::repo();
    let mut n = 0;
    let doc = CassetteDoc::from_file(&repo.join("cassettes/pick-format.cassette.json")).edit_lines(
        "events",
        |line| {
            if n < 3 {
                line["reel_note"] = json!("write to ops@acme-widgets.com");
            }
            n += 1;
        },
    );
    let fx = Fixture::new();
    let path = fx.path("c.cassette.json");
    doc.write(&path);
    let args = [
        "verify-cassettes",
        path.to_str().unwrap(),
        "--skip-staleness",
        "--skip-scenario-drift",
    ];
    let out = support::reel()
        .args(args)
        .args(["--output-format", "json"])
        .run();
    assert_eq!(out.code, 1, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_schema("verify-cassettes.json", &v);
    let emails: Vec<&Value> = v["results"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["cls"] == "email")
        .collect();
    assert_eq!(emails.len(), 1, "{v}");
    assert_eq!(emails[0]["count"], 3);
    assert_eq!(emails[0]["where"], "events[0]");
    assert_eq!(
        emails[0]["locations"],
        json!(["events[0]", "events[1]", "events[2]"])
    );
    let text = support::reel().args(args).run();
    let line = text
        .stderr
        .lines()
        .find(|l| l.contains("[email]"))
        .unwrap_or_else(|| panic!("{}", text.stderr));
    insta::assert_snapshot!("verify_repeated_finding", line.trim());
}

#[test]
fn allow_patterns_file_and_scoped_allows_suppress() {
    let items = vec![
        ("email", "mail ops@acme-corp.com".to_string()),
        ("aws-access-key-id", "AKIAQWERTYUIOPASDFGH ".to_string()),
    ];
    let (doc, _) = corpus_cassette(&items);
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("a.cassette.json");
    std::fs::write(&f, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let pats = dir.path().join("allow.txt");
    std::fs::write(
        &pats,
        "# reviewed\nops@acme-corp\\.com\n\nacme-corp\\.com\n",
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "verify-cassettes",
            f.to_str().unwrap(),
            "--skip-staleness",
            "--output-format",
            "json",
        ];
        args.extend_from_slice(extra);
        let out = support::reel().args(&args).output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        (out.status.code().unwrap(), findings(&v["results"][0]))
    };
    let (rc, f0) = run(&[]);
    assert_eq!(rc, 1);
    assert_eq!(f0.len(), 3, "{f0:?}"); // email, domain in email, aws key
    let (rc, f1) = run(&[
        "--allow-patterns-file",
        pats.to_str().unwrap(),
        "--allow-secret",
        "AKIA[A-Z0-9]{16}",
    ]);
    assert_eq!((rc, f1.len()), (0, 0), "{f1:?}");
    // A domain-scoped allow never clears the email finding.
    let (_, f2) = run(&[
        "--allow-domain",
        "acme-corp\\.com",
        "--allow-secret",
        "AKIA.*",
    ]);
    assert_eq!(
        f2.iter().map(|f| f.1.as_str()).collect::<Vec<_>>(),
        vec!["email"]
    );
}

#[test]
fn a_directory_is_verified_in_stable_order_with_per_file_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (clean, _) = corpus_cassette(&[("none", "nothing here".into())]);
    for name in ["c", "a", "b"] {
        std::fs::write(
            dir.path().join(format!("{name}.cassette.json")),
            serde_json::to_vec_pretty(&clean).unwrap(),
        )
        .unwrap();
    }
    std::fs::write(dir.path().join("bad.cassette.json"), "{").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "ignored").unwrap();
    let out = support::reel()
        .args([
            "verify-cassettes",
            dir.path().to_str().unwrap(),
            "--skip-staleness",
            "--output-format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let files: Vec<String> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["file"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        files,
        [
            "a.cassette.json",
            "b.cassette.json",
            "bad.cassette.json",
            "c.cassette.json"
        ]
    );
    assert!(v["results"][2]["error"].is_string());
}

/// reel's own example cassettes are fit to commit: replayed green elsewhere,
/// and here clean under the full gate (privacy + staleness), with the one
/// reviewed binary body allowed by the committed patterns file.
#[test]
fn the_example_cassettes_pass_the_gate() {
    let out = support::reel()
        .current_dir(support::repo())
        .args([
            "verify-cassettes",
            "cassettes/",
            "--allow-patterns-file",
            "cassettes/verify-allow.txt",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "verify-cassettes cassettes/ failed:\n{stderr}"
    );
    // Every bundled cassette has its PASS line, and the tally counts them.
    let bundled = std::fs::read_dir(support::repo().join("cassettes"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".cassette.json")
        })
        .count();
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.starts_with("PASS cassettes/"))
            .count(),
        bundled,
        "{stderr}"
    );
    assert!(
        stderr.ends_with(&format!("\n{bundled} passed, 0 failed\n")),
        "{stderr}"
    );
}
