//! `reel scaffold CASSETTE [--out FILE]`: the starter scenario of
//! `crate::scaffold` on stdout, or written with its model script.

use std::io::Write;
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::exit::ExitStatus;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Without --out the scenario is printed on stdout, its session path relative to \
        ./scenarios/ (the model \
                  script needs --out). With --out FILE \
                  the scenario is written to FILE and its model script to the `<stem>.model.yaml` \
                      beside it, which \
                  `reel record FILE` serves: the recording becomes a token-free test. Existing \
                      files are kept \
                  unless --force.\n\nExit codes: 0 written; 2 an unreadable cassette or an \
                      existing file."
)]
pub struct ScaffoldArgs {
    /// The recording to start from.
    #[arg(value_name = "CASSETTE")]
    pub cassette: PathBuf,
    /// Write the scenario here, and its model script beside it.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Overwrite existing files.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: ScaffoldArgs) -> Result<ExitStatus> {
    let at = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("scenarios/scaffold.yaml"));
    let s = crate::scaffold::scaffold(&args.cassette, &at)
        .map_err(|e| Error::usage(format!("scaffold: {}: {e}", args.cassette.display())))?;
    let mut err = std::io::stderr().lock();
    for n in &s.notes {
        let _ = writeln!(err, "note: {n}");
    }
    let Some(out) = &args.out else {
        let _ = std::io::stdout()
            .lock()
            .write_all(s.scenario_yaml.as_bytes());
        return Ok(ExitStatus::Success);
    };
    let model = crate::scaffold::model_script_path(out);
    let mut writes = vec![(out.clone(), s.scenario_yaml.clone())];
    if let Some(m) = &s.model_yaml {
        writes.push((model, m.clone()));
    }
    if !args.force
        && let Some((p, _)) = writes.iter().find(|(p, _)| p.exists())
    {
        return Err(Error::usage(format!("scaffold: {} exists", p.display()))
            .with_hint("pass --force to overwrite it, or choose another --out"));
    }
    for (p, text) in &writes {
        crate::atomic::write_atomic(p, text.as_bytes())
            .map_err(|e| Error::usage(format!("scaffold: write {}: {e}", p.display())))?;
        let _ = writeln!(err, "wrote {}", p.display());
    }
    Ok(ExitStatus::Success)
}
