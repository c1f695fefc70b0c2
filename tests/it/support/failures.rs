//! Loops over a corpus collect every failure, then assert once, so one run
//! reports all broken cases rather than the first. A case body keeps its
//! plain `assert!`s: [`Failures::case`] runs it and records its panic.

use std::fmt::Display;

/// The failures of one loop, each a self-contained message naming its case.
#[derive(Default)]
pub struct Failures(Vec<String>);

impl Failures {
    pub fn new() -> Failures {
        Failures::default()
    }

    /// Records `message` unless `ok`.
    pub fn check(&mut self, ok: bool, message: impl FnOnce() -> String) {
        if !ok {
            self.0.push(message());
        }
    }

    /// Records a difference between `got` and `want` (named `what`).
    pub fn check_eq<T: PartialEq + std::fmt::Debug>(
        &mut self,
        what: impl Display,
        got: T,
        want: T,
    ) {
        if got != want {
            self.0
                .push(format!("{what}:\n  got:  {got:?}\n  want: {want:?}"));
        }
    }

    /// Runs one case's checks, recording the first failed assertion of
    /// `body` (its panic message, prefixed with `name`) and carrying on.
    pub fn case(&mut self, name: impl Display, body: impl FnOnce()) {
        if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(a panic without a message)");
            self.0.push(format!("{name}: {message}"));
        }
    }

    /// Records `message` unconditionally.
    pub fn push(&mut self, message: impl Into<String>) {
        self.0.push(message.into());
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Panics with every recorded failure when there is any; `cases` (how
    /// many cases ran) goes into the message.
    #[track_caller]
    pub fn assert_none(self, cases: usize) {
        assert!(
            self.0.is_empty(),
            "{} of {cases} case(s) failed:\n{}",
            self.0.len(),
            self.0.join("\n---\n")
        );
    }
}

#[test]
fn every_failing_case_is_recorded_and_the_loop_goes_on() {
    let mut failures = Failures::new();
    let mut ran = Vec::new();
    for i in 0..4 {
        failures.case(format!("case {i}"), || {
            ran.push(i);
            assert!(i % 2 == 0, "{i} is odd");
        });
    }
    failures.check(false, || "a plain check".into());
    assert_eq!(ran, [0, 1, 2, 3]);
    assert_eq!(
        failures.0,
        ["case 1: 1 is odd", "case 3: 3 is odd", "a plain check"]
    );
}
