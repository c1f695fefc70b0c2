//! The one way a test runs a program and reads what it did: exit code,
//! stdout and stderr, captured whole.

use serde_json::Value;

/// What a finished command printed and how it exited (`code` -1: killed by
/// a signal or the hang guard).
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn from_output(out: &std::process::Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// stdout as one JSON document; panics naming both streams when it is not.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON document ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// Both streams, for assertion messages.
    pub fn streams(&self) -> String {
        format!("stdout:\n{}\nstderr:\n{}", self.stdout, self.stderr)
    }
}

/// `.run()` on a configured command (usually [`super::reel`]).
pub trait RunExt {
    fn run(&mut self) -> Run;
}

impl RunExt for assert_cmd::Command {
    fn run(&mut self) -> Run {
        Run::from_output(&self.output().expect("the command starts"))
    }
}

impl RunExt for std::process::Command {
    fn run(&mut self) -> Run {
        Run::from_output(&self.output().expect("the command starts"))
    }
}
