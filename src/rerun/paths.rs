//! A rerun's checks of recorded tool inputs against the fresh run: does a
//! mapped path leave the run, which paths would a recorded shell command
//! write outside it. The run roots and their placeholders are the one root
//! finder's, [`crate::mask::roots`].

use crate::mask::roots::{CONFIG, CWD, HOME, RUN};

/// True when a tool input path, after mapping, leaves the run: absolute
/// and under none of the placeholders, or climbing above its root with `..`.
pub fn escapes_run(mapped: &str) -> bool {
    let rest = [CWD, CONFIG, HOME, RUN]
        .iter()
        .find_map(|ph| mapped.strip_prefix(ph));
    let rest = match rest {
        Some(r) => r,
        None if mapped.starts_with('/') => return true,
        None => mapped,
    };
    let mut depth: i64 = 0;
    for segment in rest.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                depth -= 1;
                if depth < 0 {
                    return true;
                }
            }
            _ => depth += 1,
        }
    }
    false
}

/// Programs whose path arguments a shell command writes, moves or removes.
const WRITING_PROGRAMS: &[&str] = &[
    "rm", "rmdir", "mv", "cp", "touch", "mkdir", "tee", "chmod", "chown", "ln", "truncate",
    "install", "rsync", "unlink", "shred",
];

/// Paths a recorded shell command would visibly write outside the run:
/// arguments of writing programs and redirection targets (every form:
/// `>`, `>>`, `>|`, `&>`, `&>>`, `N>`, and a `>` inside a word), after
/// mapping. An early, readable error for what the sandbox would block
/// anyway — not the guarantee: a word-level check cannot see through
/// interpreters, substitutions or scripts, and the kernel sandbox
/// ([`crate::sandbox`]) is what confines a rerun. The devices a shell needs
/// are the only paths outside the run it lets pass (as the sandbox does).
pub fn shell_writes_outside(mapped_command: &str) -> Vec<String> {
    let Some(words) = shlex::split(mapped_command) else {
        return Vec::new();
    };
    let outside = |p: &str| {
        escapes_run(p)
            && !crate::sandbox::policy::allowed_device(p)
            && (p.starts_with('/') || p.contains(".."))
    };
    let mut out = Vec::new();
    let mut writer = false;
    let mut redirect = false;
    for word in &words {
        // `a > /p;` splits as `/p;`: a list operator ends the word.
        let w = &word.trim_end_matches([';', '&', '|']).to_owned();
        if w.is_empty() || matches!(w.as_str(), "&&" | "||" | ";" | "|" | "&") {
            writer = false;
            continue;
        }
        if std::mem::take(&mut redirect) {
            if outside(w) {
                out.push(w.clone());
            }
            continue;
        }
        if let Some(target) = redirection_target(w) {
            match target {
                "" => redirect = true,
                t if outside(t) => out.push(t.to_owned()),
                _ => {}
            }
            continue;
        }
        let program = w.rsplit('/').next().unwrap_or(w);
        if !writer && WRITING_PROGRAMS.contains(&program) {
            writer = true;
            continue;
        }
        let target = w.strip_prefix("of=").unwrap_or(w);
        if (writer || w.starts_with("of=")) && outside(target) {
            out.push(target.to_owned());
        }
    }
    out
}

/// The target of a word holding an output redirection (`""`: the next
/// word), or `None`. `>&2`-style descriptor duplications are not files.
fn redirection_target(word: &str) -> Option<&str> {
    let at = word.find('>')?;
    let mut rest = &word[at + 1..];
    rest = rest.strip_prefix('>').unwrap_or(rest);
    rest = rest
        .strip_prefix('|')
        .or_else(|| rest.strip_prefix('&'))
        .unwrap_or(rest);
    if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
        return None;
    }
    Some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_shell_writes() {
        assert!(!escapes_run("{{cwd}}/outputs/a.md"));
        assert!(!escapes_run("outputs/a.md"));
        assert!(escapes_run("/etc/passwd"));
        assert!(escapes_run("../../etc/passwd"));
        assert!(escapes_run("{{cwd}}/../../x"));
        assert!(!escapes_run("{{config}}/skills/s/../s/x"));
        assert_eq!(
            shell_writes_outside("rm -rf /work/main && ls /"),
            ["/work/main"]
        );
        assert_eq!(shell_writes_outside("echo hi > /etc/motd"), ["/etc/motd"]);
        assert_eq!(shell_writes_outside("echo hi >/root/x"), ["/root/x"]);
        assert!(shell_writes_outside("cat /etc/hosts > outputs/h.txt 2>/dev/null").is_empty());
        assert!(
            shell_writes_outside("bash {{config}}/skills/s/run.sh > outputs/x.json").is_empty()
        );
        assert!(shell_writes_outside("cp {{cwd}}/a {{cwd}}/b; mkdir -p outputs").is_empty());
        assert!(shell_writes_outside("sort -o /tmp/x y").is_empty());
        // Every redirection form, and no exemption for /tmp; the devices a
        // shell needs pass.
        for (cmd, want) in [
            ("echo x>/tmp/p", "/tmp/p"),
            ("echo x 3>/etc/p", "/etc/p"),
            ("echo x >| /etc/p", "/etc/p"),
            ("echo x &>> /root/p", "/root/p"),
            ("echo x >>/root/p", "/root/p"),
            ("cp a /tmp/b", "/tmp/b"),
            ("echo x 2>&1 > ../../../p", "../../../p"),
        ] {
            assert_eq!(shell_writes_outside(cmd), [want], "{cmd}");
        }
        assert!(shell_writes_outside("ls 2>&1 >/dev/null 2>/dev/stderr").is_empty());
    }
}
