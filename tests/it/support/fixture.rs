//! The one test fixture: a private temp directory (removed on drop) with the
//! file operations tests build their setups from, and the one prepared
//! layout several suites share — the tree capture.sh ran cowork-harness in.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{compat, copy_tree, data, git, js_pretty, read_doc};

/// A temp directory and what the test put in it.
pub struct Fixture {
    _tmp: tempfile::TempDir,
    /// The temp root, canonical (reel prints absolute paths resolved).
    root: PathBuf,
}

/// The pdf example cassette of the capture layout, relative to `peer/`.
pub const PDF: &str = "examples/replays/example-pdf-skill.cassette.json";

impl Fixture {
    /// An empty temp directory.
    pub fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        Fixture { _tmp: tmp, root }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/<rel>`.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Creates each directory `rels` names (with its parents).
    pub fn dirs(&self, rels: &[&str]) -> &Fixture {
        for rel in rels {
            std::fs::create_dir_all(self.path(rel)).unwrap();
        }
        self
    }

    /// Writes `contents` to `rel` (creating its directory); returns the path.
    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, contents).unwrap();
        p
    }

    /// The text of `rel`.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel))
            .unwrap_or_else(|e| panic!("{}: {e}", self.path(rel).display()))
    }

    /// Copies the file or tree `src` to `rel`; returns the copy's path.
    pub fn copy_in(&self, src: &Path, rel: &str) -> PathBuf {
        let to = self.path(rel);
        if src.is_dir() {
            copy_tree(src, &to);
        } else {
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(src, &to)
                .unwrap_or_else(|e| panic!("copy {} -> {}: {e}", src.display(), to.display()));
        }
        to
    }

    /// Rewrites the text of `rel` with `edit`.
    pub fn edit(&self, rel: &str, edit: impl FnOnce(&str) -> String) {
        let text = self.read(rel);
        std::fs::write(self.path(rel), edit(&text)).unwrap();
    }

    /// Rewrites the JSON file `rel` with `edit` (written back pretty, as
    /// cowork-harness writes cassettes).
    pub fn edit_json(&self, rel: &str, edit: impl FnOnce(&mut Value)) {
        let mut doc: Value = serde_json::from_str(&self.read(rel)).unwrap();
        edit(&mut doc);
        std::fs::write(self.path(rel), serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    }

    /// Runs `git args` in `<root>/<rel>`.
    pub fn git(&self, rel: &str, args: &[&str]) {
        git(&self.path(rel), args);
    }

    /// Makes `<root>/<rel>` a git work tree (if it is not one) and commits
    /// everything in it.
    pub fn commit(&self, rel: &str, message: &str) {
        if !self.path(rel).join(".git").exists() {
            self.git(rel, &["init", "-q"]);
        }
        self.git(rel, &["add", "-A"]);
        self.git(rel, &["commit", "-qm", message, "--allow-empty"]);
    }

    // ------------------------------------------------ the capture layout

    /// The layout capture.sh runs cowork-harness in: `peer/` (the compat
    /// examples and tests/data/verify/e2e, committed in a git repo because
    /// the pdf cassette was recorded in git mode) and the scratch dirs
    /// `moved/`, `empty/`, `bad/` (truncated and v99 cassettes), `legacy/`
    /// (a v11 restamp), `current/` and `drift/` (a clone of `peer/` with
    /// one tracked skill file edited, left unstaged).
    pub fn capture_layout() -> Fixture {
        let fx = Fixture::new();
        fx.copy_in(&compat("examples"), "peer/examples");
        fx.copy_in(&data("verify/e2e"), "peer/e2e");
        fx.commit("peer", "examples");
        fx.dirs(&[
            "scratch/moved",
            "scratch/empty",
            "scratch/bad",
            "scratch/legacy",
            "scratch/current",
        ]);
        let pdf = fx.peer().join(PDF);
        fx.copy_in(&pdf, "scratch/moved/example-pdf-skill.cassette.json");
        fx.copy_in(&pdf, "scratch/current/example-pdf-skill.cassette.json");
        fx.write(
            "scratch/bad/truncated.cassette.json",
            r#"{ "cassetteVersion": 12, "events": ["#,
        );
        let restamped = |version: u64| {
            let mut doc = read_doc(&pdf);
            doc.insert("cassetteVersion".into(), json!(version));
            let schema = doc["$schema"].as_str().unwrap();
            let schema = schema.replace("v12", &format!("v{version}"));
            doc.insert("$schema".into(), json!(schema));
            doc
        };
        fx.write(
            "scratch/bad/future.cassette.json",
            js_pretty(&restamped(99)),
        );
        let mut legacy = restamped(11);
        legacy["fingerprint"]
            .as_object_mut()
            .unwrap()
            .shift_remove("hashFormat");
        fx.write(
            "scratch/legacy/legacy-pdf.cassette.json",
            js_pretty(&legacy),
        );
        let (peer, drift) = (fx.peer(), fx.drift());
        git(
            fx.root(),
            &[
                "clone",
                "-q",
                peer.to_str().unwrap(),
                drift.to_str().unwrap(),
            ],
        );
        let skill = drift.join("examples/skills/my-pdf-skill/skills/my-pdf-skill/SKILL.md");
        let mut text = std::fs::read_to_string(&skill).unwrap();
        text.push_str("extra line\n");
        std::fs::write(&skill, text).unwrap();
        fx
    }

    /// `peer/` of the capture layout.
    pub fn peer(&self) -> PathBuf {
        self.path("peer")
    }

    /// `scratch/` of the capture layout.
    pub fn scratch(&self) -> PathBuf {
        self.path("scratch")
    }

    /// `scratch/drift/` of the capture layout.
    pub fn drift(&self) -> PathBuf {
        self.path("scratch/drift")
    }

    /// Expands `$PEER`, `$SCRATCH`, `$DRIFT` (as INDEX.txt spells them).
    pub fn expand(&self, s: &str) -> String {
        s.replace("$DRIFT", self.drift().to_str().unwrap())
            .replace("$SCRATCH", self.scratch().to_str().unwrap())
            .replace("$PEER", self.peer().to_str().unwrap())
    }

    /// The reverse of [`Fixture::expand`], for comparing outputs.
    pub fn normalise(&self, s: &str) -> String {
        s.replace(self.drift().to_str().unwrap(), "$DRIFT")
            .replace(self.scratch().to_str().unwrap(), "$SCRATCH")
            .replace(self.peer().to_str().unwrap(), "$PEER")
    }
}
