//! Privacy coverage as a matrix (issue 16, deliverable 3): every class, in
//! its common spellings, planted into every string location of a copy of a
//! bundled cassette, one copy per (spelling, location); `reel
//! verify-cassettes --output-format json` over the lot; caught / planted per
//! (class, location) cell, every cell full. The copies are built by editing
//! the parsed document (and the parsed lines inside it), then written back
//! through a JSON writer — optionally one that escapes the way other writers
//! do (`\u0040`, `\/`), so the scan meets the spellings a line can carry.
//!
//! The near-miss corpus goes through the same locations and must raise
//! nothing the clean copy does not.

use std::collections::BTreeMap;

use lopdf::dictionary;
use std::fmt::Write as _;
use std::path::Path;

use base64::Engine;
use serde_json::{Map, Value, json};
use sha2::Digest;

use crate::support;

/// The bundled cassette the copies are made of: it has every location (an
/// initialize exchange, system/init, streamed deltas, a gate with answers,
/// a permission prompt, tool input and result, a result line, a text body).
const BASE: &str = "cassettes/pick-format.cassette.json";

/// How a copy's JSON lines are written.
#[derive(Clone, Copy, PartialEq)]
enum Writer {
    /// serde_json's (JSON.stringify's) escapes only.
    Standard,
    /// Additionally escapes these characters as `\uXXXX` (Go escapes
    /// `<>&`, Python `ensure_ascii` every non-ASCII character, some
    /// writers `@`, `=`, `-`), and `/` as `\/` when listed (PHP).
    Escaping(&'static str),
}

struct Spelling {
    class: &'static str,
    name: &'static str,
    text: String,
    /// Any of these kinds at the planted location catches it.
    kinds: &'static [&'static str],
    writer: Writer,
}

fn sp(
    class: &'static str,
    name: &'static str,
    text: &str,
    kinds: &'static [&'static str],
) -> Spelling {
    Spelling {
        class,
        name,
        text: text.to_owned(),
        kinds,
        writer: Writer::Standard,
    }
}

fn esc(mut s: Spelling, name: &'static str, chars: &'static str) -> Spelling {
    s.name = name;
    s.writer = Writer::Escaping(chars);
    s
}

const CARD: &[&str] = &["payment-card"];
const IBAN: &[&str] = &["iban"];
const PHONE: &[&str] = &["phone-international", "phone-north-america"];
const IPV4: &[&str] = &["private-ip"];
const IPV6: &[&str] = &["private-ipv6"];
const EMAIL: &[&str] = &["email"];

fn spellings() -> Vec<Spelling> {
    let mut v = vec![
        sp(
            "card",
            "visa-spaces",
            "card 4111 1111 1111 1111 exp 09/29",
            CARD,
        ),
        sp(
            "card",
            "mastercard-dashes",
            "card 5555-5555-5555-4444 on file",
            CARD,
        ),
        sp("card", "amex-grouped", "amex 3782 822463 10005 ok", CARD),
        sp("card", "visa-compact", "pan 4012888888881881.", CARD),
        sp(
            "iban",
            "de-grouped",
            "IBAN DE89 3704 0044 0532 0130 00 thanks",
            IBAN,
        ),
        sp(
            "iban",
            "gb-grouped",
            "pay to GB82 WEST 1234 5698 7654 32.",
            IBAN,
        ),
        sp(
            "iban",
            "fr-compact",
            "iban:FR1420041010050500013M02606",
            IBAN,
        ),
        sp(
            "phone",
            "nanp-plus1-parens",
            "call +1 (555) 123-4567 today",
            PHONE,
        ),
        sp("phone", "nanp-dots", "call 555.123.4567 today", PHONE),
        sp("phone", "nanp-dashes", "call 415-555-2671 today", PHONE),
        sp("phone", "nanp-parens", "call (415) 555-2671 today", PHONE),
        sp(
            "phone",
            "nanp-plus1-dashes",
            "call +1-415-555-2671 today",
            PHONE,
        ),
        sp("phone", "uk-spaces", "call +44 20 7946 0958 now", PHONE),
        sp("phone", "fr-pairs", "tel. +33 1 42 68 53 00", PHONE),
        sp("phone", "de-compact", "Tel: +4930901820", PHONE),
        sp("ipv4", "rfc1918-10", "host 10.20.30.40 responded", IPV4),
        sp("ipv4", "rfc1918-172", "db at 172.16.5.4:5432", IPV4),
        sp("ipv4", "rfc1918-192", "router 192.168.1.23.", IPV4),
        sp("ipv4", "link-local", "metadata 169.254.10.20 up", IPV4),
        sp("ipv4", "cidr", "allow 10.0.0.0/8 and more", IPV4),
        sp("ipv6", "unique-local", "peer fd12:3456:789a:1::1 up", IPV6),
        sp("ipv6", "unique-local-fc", "peer fc00::1 up", IPV6),
        sp(
            "ipv6",
            "link-local",
            "iface fe80::1ff:fe23:4567:890a dev",
            IPV6,
        ),
        sp("ipv6", "link-local-zone", "via fe80::1%eth0 now", IPV6),
        sp(
            "ipv6",
            "bracketed-port",
            "url http://[fd00::1]:8080/x",
            IPV6,
        ),
        sp(
            "ipv6",
            "upper-full",
            "addr FD00:0DB8:85A3:0000:0000:8A2E:0370:7334",
            IPV6,
        ),
        sp(
            "email",
            "plain",
            "reach jane.doe@acme-corp.com today",
            EMAIL,
        ),
        sp(
            "email",
            "plus-subdomain",
            "<Jane.Doe+billing@mail.Acme-Corp.co.uk>",
            EMAIL,
        ),
        sp("email", "mailto", "mailto:j.smith@globex.io", EMAIL),
    ];
    v.push(esc(
        sp("email", "", "reach jane.doe@acme-corp.com today", EMAIL),
        "u-escaped-at",
        "@",
    ));
    // Secret classes: each plain, on its own lines (`\n` escapes around it
    // in a JSON line), inside a JSON snippet (`\"` around it), and with
    // `\u`/`\/` escapes inside it.
    let secrets: &[(&str, &str, &str, &'static [&'static str], &'static str)] = &[
        (
            "provider-key",
            "anthropic",
            "sk-ant-api03-Xq7vB2nL9pR4sT6wY8zA1cE3gH5jK7mN9pQ2rS4tU6vW8xY0zA2bC4dE6fG8hJ0kL2mN4pQ6rS8tU0vW2xY4zA6bC8dE0fG2hJ4kL6mN8pQAA",
            &["anthropic-api-key"],
            "-_",
        ),
        (
            "provider-key",
            "openai",
            "sk-proj-Ab3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7dE9fG1hJ3k",
            &["openai-api-key"],
            "-",
        ),
        (
            "provider-key",
            "github",
            "ghp_Ab3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5",
            &["github-token"],
            "_",
        ),
        (
            "provider-key",
            "slack",
            "xoxb-123456789012-1234567890123-Ab3dE5fG7hJ9kL1mN3pQ5rS7",
            &["slack-token"],
            "-",
        ),
        (
            "provider-key",
            "stripe",
            "sk_live_Ab3dE5fG7hJ9kL1mN3pQ5rS7",
            &["stripe-secret-key"],
            "_",
        ),
        (
            "cloud-key",
            "aws-key-id",
            "AKIAQWERTYUIOPASDFGH",
            &["aws-access-key-id"],
            "A",
        ),
        (
            "cloud-key",
            "aws-secret",
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ7w3Lm9K2",
            &["aws-secret-access-key"],
            "=/",
        ),
        (
            "cloud-key",
            "gcp",
            "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
            &["gcp-api-key"],
            "-",
        ),
        (
            "token",
            "jwt",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            &["jwt"],
            ".",
        ),
        (
            "token",
            "bearer",
            "Authorization: Bearer Ab3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z",
            &["bearer-token"],
            ": ",
        ),
        (
            "private-key",
            "pem",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7v\n-----END RSA PRIVATE KEY-----",
            &["private-key"],
            "-",
        ),
        (
            "private-key",
            "openssh",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
            &["private-key"],
            "-",
        ),
        (
            "url-credentials",
            "postgres",
            "postgres://admin:S3cr3tP4ss@db.acme-prod.io:5432/app",
            &["url-credentials"],
            "/:@",
        ),
        (
            "url-credentials",
            "https",
            "https://deploy:gh0stRid3r99@git.acme-corp.com/repo.git",
            &["url-credentials"],
            "/",
        ),
        (
            "password",
            "assignment",
            "db_password=Tr0ub4dor9x",
            &["password-assignment"],
            "=",
        ),
        (
            "password",
            "colon",
            "PASSWORD: Tr0ub4dor9x!",
            &["password-assignment"],
            ":",
        ),
    ];
    for &(class, name, secret, kinds, inner) in secrets {
        let base = Spelling {
            class,
            name,
            text: format!("use {secret} here"),
            kinds,
            writer: Writer::Standard,
        };
        v.push(Spelling {
            name: leak(format!("{name}+lines")),
            text: format!("first line\n{secret}\nlast line"),
            ..base_clone(&base)
        });
        v.push(Spelling {
            name: leak(format!("{name}+json")),
            text: json_snippet(secret),
            ..base_clone(&base)
        });
        v.push(Spelling {
            name: leak(format!("{name}+u-escaped")),
            writer: Writer::Escaping(inner),
            ..base_clone(&base)
        });
        v.push(base);
    }
    v
}

fn base_clone(s: &Spelling) -> Spelling {
    Spelling {
        class: s.class,
        name: s.name,
        text: s.text.clone(),
        kinds: s.kinds,
        writer: s.writer,
    }
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// The secret as a value in a JSON config the agent printed, so the event
/// line carries it between `\"`.
fn json_snippet(secret: &str) -> String {
    let (k, v) = match secret.split_once(['=', ':']) {
        Some((k, v)) if !secret.contains("://") && !secret.starts_with("-----") => {
            (k.trim().to_owned(), v.trim().to_owned())
        }
        _ => ("credential".to_owned(), secret.to_owned()),
    };
    let v = v
        .strip_prefix("Bearer ")
        .map_or(v.clone(), |t| format!("Bearer {t}"));
    serde_json::to_string_pretty(&json!({ k: v, "region": "eu-west-1" })).unwrap()
}

/// Near misses: must raise nothing wherever they are planted.
fn near_misses() -> Vec<&'static str> {
    vec![
        "card 4111 1111 1111 1112 fails Luhn",
        "card 5555-5555-5555-4445 fails Luhn",
        "pan 4012888888881882 fails Luhn",
        "IBAN DE89 3704 0044 0532 0130 01 fails mod 97",
        "release 10.0.0.1-rc and v10.0.0.1 and 192.168.0.1-beta.2",
        "public hosts 8.8.8.8, 1.1.1.1 and 203.0.113.7",
        "public v6 2001:4860:4860::8888 and docs 2001:db8::1 and ::1",
        "std::vector<int> and a::b::c and fe80 alone and fd12 alone",
        "mac-ish fd:12:34 and time 12:30:45 and ratio 16:9",
        "request 550e8400-e29b-41d4-a716-446655440000 done",
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "commit a94a8fe5ccb19ba61c4c0873d391e987982fbbd3 merged",
        "write to user@example.com or admin@example.org, see example.net",
        "version 1.34493.1 and v2.0.0 and 10.2 and 10.2.3",
        "at 2026-11-30T06:00:17.123Z and 2026-11-30 06:00:17+00:00",
        "ISBN 978-3-16-148410-0 and order 2024-001-0042",
        "Authorization: Bearer ${API_TOKEN}",
        "password: required",
        "keys look like sk- or ghp_ or AKIA followed by characters",
        "listen on 127.0.0.1:8080 and 0.0.0.0",
    ]
}

/// A string location of the cassette.
struct Location {
    name: &'static str,
    /// Whether a finding here is reported against a JSON line (so the
    /// line writer's escapes apply).
    line: bool,
    /// Plants `text` into `doc`; returns the `where` the finding must carry
    /// (a prefix: the artifact path location ends with the planted path).
    plant: fn(&mut Map<String, Value>, &str, Writer) -> String,
}

/// Index of the first line of `key` satisfying `pred`.
fn line_where(doc: &Map<String, Value>, key: &str, pred: impl Fn(&Value) -> bool) -> usize {
    doc[key]
        .as_array()
        .unwrap()
        .iter()
        .position(|l| pred(&serde_json::from_str(l.as_str().unwrap()).unwrap()))
        .unwrap_or_else(|| panic!("{BASE}: no such {key} line"))
}

/// Edits line `i` of `key` as parsed JSON and writes it back with `w`.
fn edit_line(
    doc: &mut Map<String, Value>,
    key: &str,
    i: usize,
    w: Writer,
    edit: impl FnOnce(&mut Value),
) -> String {
    let lines = doc.get_mut(key).unwrap().as_array_mut().unwrap();
    let mut v: Value = serde_json::from_str(lines[i].as_str().unwrap()).unwrap();
    edit(&mut v);
    let text = write_json(&v, w);
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        v,
        "the writer round-trips"
    );
    lines[i] = Value::String(text);
    format!("{key}[{i}]")
}

fn append(s: &mut Value, text: &str) {
    let old = s.as_str().unwrap().to_owned();
    *s = Value::String(format!("{old} {text}"));
}

fn ty<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or("")
}

fn body_of(doc: &Map<String, Value>) -> String {
    doc["artifacts"][0]["body"].as_str().unwrap().to_owned()
}

fn set_body(doc: &mut Map<String, Value>, body: &[u8], base64: bool) {
    let a = doc.get_mut("artifacts").unwrap()[0]
        .as_object_mut()
        .unwrap();
    a.insert("bytes".into(), json!(body.len()));
    a.insert(
        "sha256".into(),
        json!(hex::encode(sha2::Sha256::digest(body))),
    );
    if base64 {
        a.insert(
            "body".into(),
            json!(base64::engine::general_purpose::STANDARD.encode(body)),
        );
        a.insert("encoding".into(), json!("base64"));
    } else {
        a.insert("body".into(), json!(String::from_utf8_lossy(body)));
    }
}

fn xml_escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A minimal .docx-like zip whose `word/document.xml` is `xml`.
fn docx(xml: &str) -> Vec<u8> {
    use std::io::Write;
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut w = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default();
        w.start_file("[Content_Types].xml", opts).unwrap();
        w.write_all(b"<?xml version=\"1.0\"?><Types/>").unwrap();
        w.start_file("word/document.xml", opts).unwrap();
        w.write_all(xml.as_bytes()).unwrap();
        w.finish().unwrap();
    }
    buf.into_inner()
}

/// A one-page PDF edited by `edit` (a planted Info entry or form field).
fn pdf_with(edit: impl FnOnce(&mut lopdf::Document)) -> Vec<u8> {
    let bytes = reel::document::pdf::text_pdf(&["Summary"]);
    let mut doc = lopdf::Document::load_mem(&bytes).unwrap();
    edit(&mut doc);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

fn locations() -> Vec<Location> {
    vec![
        Location {
            name: "events: assistant text",
            line: true,
            plant: |d, t, w| {
                let i = line_where(d, "events", |v| {
                    ty(v, "type") == "assistant"
                        && ty(&v["message"]["content"][0], "type") == "text"
                });
                edit_line(d, "events", i, w, |v| {
                    append(&mut v["message"]["content"][0]["text"], t)
                })
            },
        },
        Location {
            name: "events: streamed delta",
            line: true,
            plant: |d, t, w| {
                let i = line_where(d, "events", |v| {
                    ty(&v["event"]["delta"], "type") == "input_json_delta"
                });
                let fragment = serde_json::to_string(&json!({ "content": t })).unwrap();
                edit_line(d, "events", i, w, |v| {
                    v["event"]["delta"]["partial_json"] = json!(fragment)
                })
            },
        },
        Location {
            // Cut in two streamed fragments: in no single line.
            name: "events: delta split in two",
            line: true,
            plant: |d, t, w| {
                let i = line_where(d, "events", |v| {
                    ty(&v["event"]["delta"], "type") == "input_json_delta"
                });
                let fragment = serde_json::to_string(&json!({ "content": t })).unwrap();
                let mut cut = fragment.len() / 2;
                while !fragment.is_char_boundary(cut) {
                    cut += 1;
                }
                let (head, tail) = (fragment[..cut].to_owned(), fragment[cut..].to_owned());
                let lines = d.get_mut("events").unwrap().as_array_mut().unwrap();
                let copy = lines[i].clone();
                lines.insert(i + 1, copy);
                edit_line(d, "events", i, w, |v| {
                    v["event"]["delta"]["partial_json"] = json!(head)
                });
                edit_line(d, "events", i + 1, w, |v| {
                    v["event"]["delta"]["partial_json"] = json!(tail)
                });
                // Found in the joined block, or in one fragment when the cut
                // missed the secret.
                "events[".to_owned()
            },
        },
        Location {
            name: "events: tool input",
            line: true,
            plant: |d, t, w| {
                let i = line_where(d, "events", |v| {
                    ty(&v["message"]["content"][0], "name") == "Write"
                });
                edit_line(d, "events", i, w, |v| {
                    append(&mut v["message"]["content"][0]["input"]["content"], t)
                })
            },
        },
        Location {
            name: "events: tool result",
            line: true,
            plant: |d, t, w| {
                let i = line_where(d, "events", |v| {
                    ty(&v["message"]["content"][0], "type") == "tool_result"
                });
                edit_line(d, "events", i, w, |v| {
                    append(&mut v["message"]["content"][0]["content"], t)
                })
            },
        },
        Location {
            name: "events: result",
            line: true,
            plant: |d, t, w| {
                let i = line_where(d, "events", |v| ty(v, "type") == "result");
                edit_line(d, "events", i, w, |v| append(&mut v["result"], t))
            },
        },
        Location {
            name: "events: permission request",
            line: true,
            plant: |d, t, w| {
                let i = line_where(d, "events", |v| {
                    ty(&v["request"], "subtype") == "can_use_tool"
                });
                edit_line(d, "events", i, w, |v| {
                    append(&mut v["request"]["input"]["questions"][0]["question"], t)
                })
            },
        },
        Location {
            name: "events: system/init",
            line: true,
            plant: |d, t, w| {
                let i = line_where(d, "events", |v| ty(v, "subtype") == "init");
                edit_line(d, "events", i, w, |v| append(&mut v["cwd"], t))
            },
        },
        Location {
            name: "events: initialize response",
            line: true,
            plant: |d, t, w| {
                let i = line_where(d, "events", |v| {
                    ty(&v["response"], "request_id") == "init-1"
                });
                edit_line(d, "events", i, w, |v| {
                    append(
                        &mut v["response"]["response"]["commands"][0]["description"],
                        t,
                    )
                })
            },
        },
        Location {
            name: "controlOut: initialize",
            line: true,
            plant: |d, t, w| {
                let i = line_where(d, "controlOut", |v| {
                    ty(&v["request"], "subtype") == "initialize"
                });
                edit_line(d, "controlOut", i, w, |v| {
                    v["request"]["appendSystemPrompt"] = json!(t)
                })
            },
        },
        Location {
            name: "controlOut: user prompt",
            line: true,
            plant: |d, t, w| {
                let i = line_where(d, "controlOut", |v| ty(v, "type") == "user");
                edit_line(d, "controlOut", i, w, |v| {
                    append(&mut v["message"]["content"][0]["text"], t)
                })
            },
        },
        Location {
            name: "controlOut: gate answer",
            line: true,
            plant: |d, t, w| {
                let i = line_where(d, "controlOut", |v| {
                    v["response"]["response"]["updatedInput"]["answers"].is_object()
                });
                edit_line(d, "controlOut", i, w, |v| {
                    let answers = &mut v["response"]["response"]["updatedInput"]["answers"];
                    let q = answers.as_object().unwrap().keys().next().unwrap().clone();
                    answers[q] = json!(t);
                })
            },
        },
        Location {
            name: "controlOut: permission answer",
            line: true,
            plant: |d, t, w| {
                let i = line_where(d, "controlOut", |v| {
                    v["response"]["response"]["updatedInput"]["content"].is_string()
                });
                edit_line(d, "controlOut", i, w, |v| {
                    append(&mut v["response"]["response"]["updatedInput"]["content"], t)
                })
            },
        },
        Location {
            name: "scenario: prompt",
            line: false,
            plant: |d, t, _| {
                append(&mut d["scenario"]["prompt"], t);
                "scenario.prompt".into()
            },
        },
        Location {
            name: "scenario: answers",
            line: false,
            plant: |d, t, _| {
                d["scenario"]["answers"][0]["choose"] = json!(t);
                "scenario.answers".into()
            },
        },
        Location {
            name: "scenario: assert",
            line: false,
            plant: |d, t, _| {
                d["scenario"]["assert"][1]["question_asked"] = json!(t);
                "scenario.assert".into()
            },
        },
        Location {
            name: "scenario: other field",
            line: false,
            plant: |d, t, _| {
                d["scenario"]["expect_denied"] = json!([t]);
                "scenario.expect_denied".into()
            },
        },
        Location {
            name: "scenario: name",
            line: false,
            plant: |d, t, _| {
                d["scenario"]["name"] = json!(t);
                "metadata:scenario.name".into()
            },
        },
        Location {
            name: "artifact: body",
            line: false,
            plant: |d, t, _| {
                let body = format!("{}\n{t}\n", body_of(d));
                set_body(d, body.as_bytes(), false);
                "artifact outputs/note.md".into()
            },
        },
        Location {
            name: "artifact: base64 body",
            line: false,
            plant: |d, t, _| {
                let body = format!("{}\n{t}\n", body_of(d));
                set_body(d, body.as_bytes(), true);
                "artifact outputs/note.md".into()
            },
        },
        Location {
            name: "artifact: docx paragraph",
            line: false,
            plant: |d, t, _| {
                let xml = format!(
                    "<?xml version=\"1.0\"?><w:document xmlns:w=\"http://schemas.\
                     openxmlformats.org/wordprocessingml/2006/main\"><w:body><w:p><w:r><w:t>{}\
                     </w:t></w:r></w:p></w:body></w:document>",
                    xml_escape(t)
                );
                set_body(d, &docx(&xml), true);
                "artifact outputs/note.md → word/document.xml".into()
            },
        },
        Location {
            name: "artifact: docx attribute",
            line: false,
            plant: |d, t, _| {
                let xml = format!(
                    "<?xml version=\"1.0\"?><Relationships xmlns=\"http://schemas.\
                     openxmlformats.org/package/2006/relationships\"><Relationship Id=\"rId1\" \
                     Target=\"{}\"/></Relationships>",
                    xml_escape(t)
                );
                set_body(d, &docx(&xml), true);
                "artifact outputs/note.md → word/document.xml".into()
            },
        },
        Location {
            name: "artifact: pdf page text",
            line: false,
            plant: |d, t, _| {
                set_body(d, &reel::document::pdf::text_pdf(&["Summary", t]), true);
                "artifact outputs/note.md → page 2".into()
            },
        },
        Location {
            name: "artifact: pdf metadata",
            line: false,
            plant: |d, t, _| {
                set_body(
                    d,
                    &pdf_with(|doc| {
                        let info = doc.add_object(dictionary! {
                            "Author" => lopdf::text_string(t),
                        });
                        doc.trailer.set("Info", info);
                    }),
                    true,
                );
                "artifact outputs/note.md → info Author".into()
            },
        },
        Location {
            name: "artifact: pdf form field",
            line: false,
            plant: |d, t, _| {
                set_body(
                    d,
                    &pdf_with(|doc| {
                        let field = doc.add_object(dictionary! {
                            "T" => lopdf::Object::string_literal("notes"),
                            "V" => lopdf::text_string(t),
                        });
                        let form = doc.add_object(dictionary! { "Fields" => vec![field.into()] });
                        doc.catalog_mut().unwrap().set("AcroForm", form);
                    }),
                    true,
                );
                "artifact outputs/note.md → field notes".into()
            },
        },
        Location {
            name: "artifact: path",
            line: false,
            plant: |d, t, _| {
                let p = format!("outputs/{}.md", t.replace('\n', " "));
                d.get_mut("artifacts").unwrap()[0]["path"] = json!(p);
                format!("artifact path {p}")
            },
        },
        Location {
            name: "metadata: userVisibleRoots",
            line: false,
            plant: |d, t, _| {
                d["userVisibleRoots"].as_array_mut().unwrap().push(json!(t));
                "metadata:userVisibleRoots[1]".into()
            },
        },
        Location {
            name: "metadata: scenarioSource",
            line: false,
            plant: |d, t, _| {
                d.insert("scenarioSource".into(), json!(t));
                "metadata:scenarioSource".into()
            },
        },
        Location {
            name: "metadata: folderPrefixMap",
            line: false,
            plant: |d, t, _| {
                d["folderPrefixMap"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"from": t, "to": "/sessions/x"}));
                "folderPrefixMap[0].from".into()
            },
        },
        Location {
            name: "metadata: preRunPaths",
            line: false,
            plant: |d, t, _| {
                d["preRunPaths"].as_array_mut().unwrap().push(json!(t));
                "preRunPaths[0]".into()
            },
        },
        Location {
            name: "metadata: environment",
            line: false,
            plant: |d, t, _| {
                d["environment"]["agentImage"] = json!({ "ref": t });
                "metadata:environment.agentImage.ref".into()
            },
        },
        Location {
            name: "metadata: timeline",
            line: false,
            plant: |d, t, _| {
                d["timeline"][0]["name"] = json!(t);
                "timeline[0].name".into()
            },
        },
    ]
}

/// `JSON.stringify` output, plus the extra escapes of `w`.
fn write_json(v: &Value, w: Writer) -> String {
    fn string(s: &str, extra: &str, out: &mut String) {
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '/' if extra.contains('/') => out.push_str("\\/"),
                c if (c as u32) < 0x20 || extra.contains(c) => {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }
    fn value(v: &Value, extra: &str, out: &mut String) {
        match v {
            Value::String(s) => string(s, extra, out),
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    value(x, extra, out);
                }
                out.push(']');
            }
            Value::Object(o) => {
                out.push('{');
                for (i, (k, x)) in o.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    string(k, extra, out);
                    out.push(':');
                    value(x, extra, out);
                }
                out.push('}');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    match w {
        Writer::Standard => serde_json::to_string(v).unwrap(),
        Writer::Escaping(extra) => {
            let mut out = String::new();
            value(v, extra, &mut out);
            out
        }
    }
}

#[derive(serde::Deserialize)]
struct Found {
    #[serde(rename = "where")]
    location: String,
    kind: String,
    sample: String,
    /// A merged finding's every location (`where` is the first).
    #[serde(default)]
    locations: Vec<String>,
}

/// Writes the copies into `dir`, runs the gate over it, and returns the
/// findings per file name.
fn verify_dir(dir: &Path) -> BTreeMap<String, Vec<Found>> {
    let out = support::reel()
        .args([
            "verify-cassettes",
            dir.to_str().unwrap(),
            "--skip-staleness",
            "--skip-scenario-drift",
            "--output-format",
            "json",
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "verify-cassettes JSON: {e}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let file = r["file"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_owned();
            let found = serde_json::from_value(r["findings"].clone()).unwrap_or_default();
            (file, found)
        })
        .collect()
}

fn base() -> Map<String, Value> {
    serde_json::from_slice(&std::fs::read(support::repo().join(BASE)).unwrap()).unwrap()
}

fn write_copy(dir: &Path, name: &str, doc: &Map<String, Value>) {
    std::fs::write(
        dir.join(format!("{name}.cassette.json")),
        serde_json::to_vec_pretty(doc).unwrap(),
    )
    .unwrap();
}

/// Findings of the untouched copy, as `(where, kind, sample)`.
fn baseline(found: &BTreeMap<String, Vec<Found>>) -> Vec<(String, String, String)> {
    found["clean.cassette.json"]
        .iter()
        .map(|f| (f.location.clone(), f.kind.clone(), f.sample.clone()))
        .collect()
}

#[test]
fn every_class_is_caught_in_every_location() {
    let dir = tempfile::tempdir().unwrap();
    let spellings = spellings();
    let locations = locations();
    write_copy(dir.path(), "clean", &base());
    // file name → (spelling index, location index, expected where)
    let mut planted: BTreeMap<String, (usize, usize, String)> = BTreeMap::new();
    for (li, loc) in locations.iter().enumerate() {
        for (si, s) in spellings.iter().enumerate() {
            // A writer's escapes exist only where there is a JSON line.
            if s.writer != Writer::Standard && !loc.line {
                continue;
            }
            let mut doc = base();
            let at = (loc.plant)(&mut doc, &s.text, s.writer);
            let name = format!("l{li:02}-s{si:03}");
            write_copy(dir.path(), &name, &doc);
            planted.insert(format!("{name}.cassette.json"), (si, li, at));
        }
    }
    let found = verify_dir(dir.path());
    let clean = baseline(&found);
    assert!(clean.is_empty(), "{BASE} is not clean: {clean:?}");

    // (class, location) → (caught, planted); and the misses, named.
    let mut cells: BTreeMap<(&str, usize), (usize, usize)> = BTreeMap::new();
    let mut missed = vec![];
    for (file, (si, li, at)) in &planted {
        let s = &spellings[*si];
        let caught = found[file].iter().any(|f| {
            s.kinds.contains(&f.kind.as_str())
                && std::iter::once(&f.location)
                    .chain(&f.locations)
                    .any(|l| l.starts_with(at.as_str()))
        });
        let cell = cells.entry((s.class, *li)).or_default();
        cell.1 += 1;
        if caught {
            cell.0 += 1;
        } else {
            let got: Vec<_> = found[file]
                .iter()
                .map(|f| format!("{} @ {} ({})", f.kind, f.location, f.sample))
                .collect();
            missed.push(format!(
                "{} / {} [{}] at {at}: {:?} — found {got:?}",
                s.class, s.name, locations[*li].name, s.text
            ));
        }
    }
    let mut classes: Vec<&str> = spellings.iter().map(|s| s.class).collect();
    classes.dedup();
    let mut table = format!("{:<30}", "location \\ class");
    for c in &classes {
        let _ = write!(table, " {c:>15}");
    }
    for (li, loc) in locations.iter().enumerate() {
        let _ = write!(table, "\n{:<30}", loc.name);
        for c in &classes {
            let (k, n) = cells.get(&(*c, li)).copied().unwrap_or_default();
            let _ = write!(table, " {:>15}", format!("{k}/{n}"));
        }
    }
    eprintln!("{table}");
    assert!(
        missed.is_empty(),
        "{table}\n\nmissed {} of {} plantings:\n{}",
        missed.len(),
        planted.len(),
        missed.join("\n")
    );
}

#[test]
fn near_misses_raise_nothing_in_any_location() {
    let dir = tempfile::tempdir().unwrap();
    let locations = locations();
    write_copy(dir.path(), "clean", &base());
    let mut planted = BTreeMap::new();
    for (li, loc) in locations.iter().enumerate() {
        for (ni, text) in near_misses().iter().enumerate() {
            let mut doc = base();
            (loc.plant)(&mut doc, text, Writer::Standard);
            let name = format!("l{li:02}-n{ni:02}");
            write_copy(dir.path(), &name, &doc);
            planted.insert(format!("{name}.cassette.json"), (loc.name, *text));
        }
    }
    let found = verify_dir(dir.path());
    let clean = baseline(&found);
    let mut raised = vec![];
    for (file, (loc, text)) in &planted {
        for f in &found[file] {
            // The artifact path location renames the artifact: its clean
            // findings (none today) would move with it.
            if !clean.iter().any(|c| c.1 == f.kind && c.2 == f.sample) {
                raised.push(format!(
                    "[{loc}] {text:?}: {} @ {} ({})",
                    f.kind, f.location, f.sample
                ));
            }
        }
    }
    assert!(
        raised.is_empty(),
        "near misses raised {} finding(s):\n{}",
        raised.len(),
        raised.join("\n")
    );
}

/// The record-time scrubber shares the detector table with the scanner: a
/// secret planted anywhere the scrubber rewrites is gone after a scrub, as
/// far as the scanner can tell. (`scenario.name` and `scenarioSource` are
/// identities a scrub must keep — a renamed scenario would not resolve —
/// so the gate catches them instead; the matrix above shows it does.)
#[test]
fn the_scrubber_removes_every_secret_the_scanner_finds() {
    let secret_classes = [
        "provider-key",
        "cloud-key",
        "token",
        "private-key",
        "url-credentials",
        "password",
    ];
    let mut left = vec![];
    let mut checked = 0;
    for loc in locations() {
        if matches!(loc.name, "scenario: name" | "metadata: scenarioSource") {
            continue;
        }
        for s in spellings() {
            if !secret_classes.contains(&s.class) || (s.writer != Writer::Standard && !loc.line) {
                continue;
            }
            let mut doc = base();
            let at = (loc.plant)(&mut doc, &s.text, s.writer);
            let before = reel::verify::scan::scan_document(&doc, &Default::default()).unwrap();
            assert!(
                before
                    .iter()
                    .any(|f| s.kinds.contains(&f.kind) && f.location.starts_with(&at)),
                "{} not planted at {at}",
                s.name
            );
            reel::verify::redact::scrub_cassette(&mut doc, &Default::default()).unwrap();
            checked += 1;
            let after = reel::verify::scan::scan_document(&doc, &Default::default()).unwrap();
            for f in after.iter().filter(|f| f.cls.as_str() == "secret") {
                left.push(format!(
                    "{} [{}]: {} @ {} ({})",
                    s.name, loc.name, f.kind, f.location, f.sample
                ));
            }
        }
    }
    assert!(checked > 500, "{checked}");
    assert!(
        left.is_empty(),
        "{} secret(s) survived the scrub:\n{}",
        left.len(),
        left.join("\n")
    );
}
