//! The task list (TaskCreate / TaskUpdate).

use serde_json::{Value, json};

use super::*;

const TASK_STATUS: &[Field] = &[req("match", Param::Str), req("status", Param::Str)];

pub(super) const KEYS: &[Key] = &[
    Key {
        name: "all_tasks_completed",
        bucket: Bucket::Always,
        param: Param::True,
        description: "at least one task was created and every task is completed",
        ranks: Ranks {
            listed: 35,
            check: 42,
            schema: 37,
            strip: Some(31),
        },
        eval: Eval::One(all_tasks_completed),
        ..Key::DEFAULTS
    },
    Key {
        name: "task_count_min",
        bucket: Bucket::Always,
        param: Param::PosInt,
        description: "at least N tasks were created",
        ranks: Ranks {
            listed: 36,
            check: 43,
            schema: 38,
            strip: Some(32),
        },
        eval: Eval::One(task_count_min),
        margin: Some(Margin {
            rank: 7,
            kind: MarginKind::Min,
            recorded: |r| Some(r.task_count() as f64),
        }),
        ..Key::DEFAULTS
    },
    Key {
        name: "task_status",
        bucket: Bucket::Always,
        param: Param::Object(TASK_STATUS, Refine::None),
        description: "the first task matching `match` has this status",
        example: Some(|| json!({"match": "write", "status": "completed"})),
        ranks: Ranks {
            listed: 37,
            check: 44,
            schema: 39,
            strip: Some(33),
        },
        eval: Eval::One(task_status),
        ..Key::DEFAULTS
    },
];

fn task_count_min(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let min = f64_param(key, v)?;
    let e = env.run.evidence_errors.task_tracking;
    if e > 0 {
        return Err(format!(
            "task_count_min: {e} TaskCreate result(s) were unparseable — task count is \
                under-reported, cannot verify (malformed)"
        ));
    }
    let n = env.run.task_count();
    if (n as f64) >= min {
        ok()
    } else {
        Err(format!(
            "task_count_min: {n} task(s) created, need ≥ {}",
            num(v)
        ))
    }
}

fn all_tasks_completed(env: &mut Env<'_>, _key: &'static str, _v: &Value) -> KeyResult {
    let e = env.run.evidence_errors.task_tracking;
    if e > 0 {
        return Err(format!(
            "all_tasks_completed: {e} TaskCreate result(s) were unparseable — task telemetry is \
                incomplete, cannot verify (malformed)"
        ));
    }
    if env.run.tasks.is_empty() {
        return Err(
            "all_tasks_completed: no tasks were created — cannot verify completion (assert \
            task_count_min for presence, or drop this)"
                .into(),
        );
    }
    let open: Vec<String> = env
        .run
        .tasks
        .iter()
        .filter(|t| t.status != "completed")
        .map(|t| format!("{} ({})", t.subject, t.status))
        .collect();
    if open.is_empty() {
        ok()
    } else {
        Err(format!("not all tasks are completed: {}", open.join(", ")))
    }
}

fn task_status(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let m = obj_param(key, v)?;
    let (Some(pat), Some(status)) = (opt_str(m, "match"), opt_str(m, "status")) else {
        return Err(bad_param(key));
    };
    let e = env.run.evidence_errors.task_tracking;
    if e > 0 {
        return Err(format!(
            "task_status: {e} TaskCreate result(s) were unparseable — task telemetry is \
                incomplete, cannot verify (malformed)"
        ));
    }
    let re = env.re(key, pat)?;
    let mut found = None;
    for task in &env.run.tasks {
        if t(key, &re, &task.subject)? || t(key, &re, &task.id)? {
            found = Some(task);
            break;
        }
    }
    match found {
        None => Err(format!("no task matched \"{pat}\"")),
        Some(task) if task.status == status => ok(),
        Some(task) => Err(format!(
            "task \"{}\" matched \"{pat}\" but has status \"{}\", expected \"{status}\"",
            task.subject, task.status
        )),
    }
}
