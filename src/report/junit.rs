//! `--junit FILE`: JUnit XML with one suite per cassette and one case per
//! assertion (pseudo-assertions included; a cassette that could not be
//! replayed is one errored case), written atomically.

use std::path::Path;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::replay::ReplayResult;

/// Builds the XML document.
pub fn render(results: &[ReplayResult]) -> Result<String, quick_junit::SerializeError> {
    let mut report = Report::new("reel replay");
    for r in results {
        let mut suite = TestSuite::new(r.file.display().to_string());
        if let Some(err) = &r.error {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            status.set_message(err.clone());
            let mut case = TestCase::new("load", status);
            case.set_classname(r.file.display().to_string());
            suite.add_test_case(case);
            report.add_test_suite(suite);
            continue;
        }
        for (i, a) in r.assertions.iter().enumerate() {
            let name = match a.assertion.as_object() {
                // A multi-turn scenario's turn assertion: named for its turn.
                Some(m) if !m.is_empty() => match crate::replay::turns::turn_of(a) {
                    Some(turn) => format!("[{i}] {turn}: {}", a.assertion),
                    None => format!("[{i}] {}", a.assertion),
                },
                _ => format!("[{i}] ({})", a.source.as_deref().unwrap_or("assertion")),
            };
            let status = if a.pass {
                TestCaseStatus::success()
            } else {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(a.message.clone());
                s.set_type(a.source.clone().unwrap_or_else(|| "assertion".into()));
                s
            };
            let mut case = TestCase::new(name, status);
            case.set_classname(r.scenario().to_string());
            suite.add_test_case(case);
        }
        for f in r.verdict.failures.iter().filter(|f| f.kind == "guard") {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(f.message.clone());
            s.set_type("guard");
            let mut case = TestCase::new("verdict guard", s);
            case.set_classname(r.scenario().to_string());
            suite.add_test_case(case);
        }
        report.add_test_suite(suite);
    }
    // Recorded strings shown inert: XML 1.0 has no place for most controls,
    // and a CI step may print the file.
    report
        .to_string()
        .map(|xml| crate::terminal_safe::block(&xml).into_owned())
}

/// Writes the report to `path` atomically.
pub fn write(path: &Path, results: &[ReplayResult]) -> std::io::Result<()> {
    let xml = render(results).map_err(std::io::Error::other)?;
    crate::atomic::write_atomic(path, xml.as_bytes())
}
