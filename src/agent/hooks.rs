//! Executing a harness's hooks (`hooks/hooks.json`, schema in `harness::hooks`).
//!
//! Command hooks follow Claude Code: the hook input JSON goes to the program's stdin; exit 0 allows
//! (stdout may carry a JSON decision: `hookSpecificOutput.permissionDecision = "deny"`, `updatedInput`,
//! or `decision = "block"`), exit 2 blocks with stderr as the feedback, any other code is a non-blocking
//! error. The program file is spawned directly with its configured arguments — never through a shell —
//! so model output (which only ever travels on stdin) cannot be interpolated into a command line. A hook
//! that outlives its timeout is killed and counts as a non-blocking error, as in Claude Code.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use regex::Regex;
use serde_json::{json, Map, Value};

use super::checks::{self, BannedTerms};
use crate::harness::hooks::{BuiltinCheck, BuiltinHook, Feedback, FeedbackRole, Hook, HookEvent};
use crate::harness::Harness;

/// A harness's hooks, compiled once per harness: matchers, banned-term lists and command paths.
#[derive(Debug, Clone)]
pub struct Hooks {
    groups: Vec<Group>,
    cwd: Option<PathBuf>,
}

#[derive(Debug, Clone)]
struct Group {
    event: HookEvent,
    matcher: Option<Regex>,
    hooks: Vec<Prepared>,
}

/// One hook ready to run; `id` is its position in the file, used to count retries per hook.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub id: usize,
    pub kind: Kind,
}

#[derive(Debug, Clone)]
pub enum Kind {
    Command {
        path: PathBuf,
        args: Vec<String>,
        timeout: Duration,
    },
    Builtin {
        hook: BuiltinHook,
        banned: Option<BannedTerms>,
    },
}

/// What a hook decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Allow,
    /// Continue with this replacement (tool input from `updatedInput`, or fixed text).
    Modify(Value),
    /// Refuse, with the reason to feed back.
    Block(String),
    /// The hook itself failed (non-zero exit other than 2, unreadable output); execution continues.
    Error(String),
    /// The hook was killed at its timeout; execution continues.
    TimedOut,
}

impl Hooks {
    /// Compile the hooks of `harness`. Command hooks need a harness loaded from disk.
    pub fn new(harness: &Harness) -> Result<Hooks> {
        let mut groups = Vec::new();
        let mut id = 0;
        for eh in &harness.hooks().events {
            for g in &eh.groups {
                let matcher = g
                    .compiled_matcher()
                    .with_context(|| format!("hook matcher {:?}", g.matcher))?;
                let mut hooks = Vec::new();
                for h in &g.hooks {
                    let kind = match h {
                        Hook::Command(c) => Kind::Command {
                            path: harness
                                .resolve_path(&c.command)
                                .with_context(|| format!("command hook {}", c.command))?,
                            args: c.args.clone(),
                            timeout: Duration::from_secs(harness.hook_timeout_s(c)),
                        },
                        Hook::Builtin(b) => {
                            let banned = match &b.check {
                                BuiltinCheck::BannedTerms(p) => Some(BannedTerms::new(
                                    &p.all_terms(harness.files()),
                                    p.case_sensitive,
                                )),
                                _ => None,
                            };
                            Kind::Builtin {
                                hook: b.clone(),
                                banned,
                            }
                        }
                    };
                    hooks.push(Prepared { id, kind });
                    id += 1;
                }
                groups.push(Group {
                    event: eh.event,
                    matcher,
                    hooks,
                });
            }
        }
        Ok(Hooks {
            groups,
            cwd: harness.root().map(Path::to_path_buf),
        })
    }

    /// Hooks of `event` that apply to `tool` (tool events) in file order.
    pub fn for_event<'a>(
        &'a self,
        event: HookEvent,
        tool: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Prepared> + 'a {
        self.groups
            .iter()
            .filter(move |g| g.event == event)
            .filter(move |g| match (&g.matcher, tool) {
                (Some(re), Some(t)) => re.is_match(t),
                _ => true,
            })
            .flat_map(|g| g.hooks.iter())
    }

    pub fn has(&self, event: HookEvent) -> bool {
        self.groups
            .iter()
            .any(|g| g.event == event && !g.hooks.is_empty())
    }

    /// Run a command hook with `input` on stdin.
    pub fn run_command(
        &self,
        path: &Path,
        args: &[String],
        timeout: Duration,
        input: &Value,
    ) -> Decision {
        decide(run_with_timeout(
            path,
            args,
            self.cwd.as_deref(),
            &input.to_string(),
            timeout,
        ))
    }
}

/// How a command ended.
#[derive(Debug)]
enum Ended {
    Exit {
        code: Option<i32>,
        stdout: String,
        stderr: String,
    },
    TimedOut,
    SpawnFailed(String),
}

fn run_with_timeout(
    path: &Path,
    args: &[String],
    cwd: Option<&Path>,
    stdin: &str,
    timeout: Duration,
) -> Ended {
    let mut cmd = Command::new(path);
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = cwd {
        cmd.current_dir(dir)
            .env("CLAUDE_PROJECT_DIR", dir)
            .env("HAT_HARNESS_DIR", dir);
    }
    // Its own process group, so a timeout kills whatever the hook started too (a shell script's
    // children would otherwise hold the output pipes open).
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return Ended::SpawnFailed(format!("cannot run {}: {e}", path.display())),
    };
    // Readers on their own threads, so a chatty hook cannot fill a pipe and deadlock us.
    let out = child
        .stdout
        .take()
        .map(|mut s| std::thread::spawn(move || read_all(&mut s)));
    let err = child
        .stderr
        .take()
        .map(|mut s| std::thread::spawn(move || read_all(&mut s)));
    if let Some(mut sin) = child.stdin.take() {
        // A hook may exit without reading its input; a broken pipe is not an error then.
        let _ = sin.write_all(stdin.as_bytes());
    }
    let start = Instant::now();
    let mut pause = Duration::from_micros(50);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() >= timeout => {
                kill_group(&mut child);
                let _ = child.wait();
                break None;
            }
            Ok(None) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(5));
            }
            Err(e) => return Ended::SpawnFailed(format!("waiting for {}: {e}", path.display())),
        }
    };
    let stdout = out.and_then(|h| h.join().ok()).unwrap_or_default();
    let stderr = err.and_then(|h| h.join().ok()).unwrap_or_default();
    match status {
        None => Ended::TimedOut,
        Some(s) => Ended::Exit {
            code: s.code(),
            stdout,
            stderr,
        },
    }
}

/// Kill a hook and everything in its process group.
fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    {
        // `kill -KILL -- -PGID` (the group id is the child's pid); spawned directly, no shell involved.
        let group = format!("-{}", child.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let _ = child.kill();
}

fn read_all(r: &mut impl Read) -> String {
    let mut buf = Vec::new();
    let _ = r.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

fn decide(ended: Ended) -> Decision {
    match ended {
        Ended::TimedOut => Decision::TimedOut,
        Ended::SpawnFailed(e) => Decision::Error(e),
        Ended::Exit {
            code: Some(2),
            stderr,
            ..
        } => {
            let reason = stderr.trim();
            Decision::Block(if reason.is_empty() {
                "blocked by a hook".to_string()
            } else {
                reason.to_string()
            })
        }
        Ended::Exit {
            code: Some(0),
            stdout,
            ..
        } => {
            let text = stdout.trim();
            if text.is_empty() {
                return Decision::Allow;
            }
            let Ok(v) = serde_json::from_str::<Value>(text) else {
                // Plain stdout is context, not a decision.
                return Decision::Allow;
            };
            let specific = v.get("hookSpecificOutput");
            let reason = |keys: &[&str]| {
                keys.iter()
                    .find_map(|k| {
                        specific
                            .and_then(|s| s.get(*k))
                            .or_else(|| v.get(*k))
                            .and_then(Value::as_str)
                    })
                    .unwrap_or("blocked by a hook")
                    .to_string()
            };
            if specific
                .and_then(|s| s.get("permissionDecision"))
                .and_then(Value::as_str)
                == Some("deny")
                || v.get("decision").and_then(Value::as_str) == Some("block")
                || v.get("continue") == Some(&Value::Bool(false))
            {
                return Decision::Block(reason(&[
                    "permissionDecisionReason",
                    "reason",
                    "stopReason",
                ]));
            }
            match specific.and_then(|s| s.get("updatedInput")) {
                Some(updated) if updated.is_object() => Decision::Modify(updated.clone()),
                _ => Decision::Allow,
            }
        }
        Ended::Exit { code, stderr, .. } => Decision::Error(format!(
            "hook exited with {}: {}",
            code.map_or("a signal".to_string(), |c| c.to_string()),
            stderr.trim()
        )),
    }
}

/// A built-in check that failed: the reason and the template variables describing it.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub reason: String,
    pub vars: Map<String, Value>,
    /// The repaired text, for checks that can fix.
    pub fixed: Option<String>,
}

/// Evaluate a built-in check on a reply (Stop) or a viewer message (UserPromptSubmit).
/// `sources` are this turn's tool results from the tools the check trusts.
pub fn check_text(
    hook: &BuiltinHook,
    banned: Option<&BannedTerms>,
    text: &str,
    max_reply_chars: u64,
    sources: &[&str],
) -> Option<Failure> {
    let mut vars = Map::new();
    match &hook.check {
        BuiltinCheck::ReplyLength(p) => {
            let limit = p.max_chars.unwrap_or(max_reply_chars);
            let n = checks::reply_chars(text);
            if n <= limit {
                return None;
            }
            vars.insert("limit".into(), json!(limit));
            Some(Failure {
                reason: format!("the reply has {n} characters; the limit is {limit}"),
                vars,
                fixed: Some(checks::truncate_reply(text, limit)),
            })
        }
        BuiltinCheck::BannedTerms(_) => {
            let banned = banned?;
            let terms = banned.found(text);
            if terms.is_empty() {
                return None;
            }
            let reason = format!("banned terms: {}", terms.join(", "));
            vars.insert("terms".into(), json!(terms));
            Some(Failure {
                reason,
                vars,
                fixed: Some(banned.mask(text)),
            })
        }
        BuiltinCheck::GroundedNumbers(p) => {
            let numbers = checks::ungrounded_numbers(text, &p.kinds, sources);
            if numbers.is_empty() {
                return None;
            }
            let reason = format!(
                "numbers not found in this turn's tool results: {}",
                numbers.join(", ")
            );
            vars.insert("numbers".into(), json!(numbers));
            Some(Failure {
                reason,
                vars,
                fixed: None,
            })
        }
        BuiltinCheck::ToolCallJson(_) => None,
    }
}

/// Evaluate `tool_call_json` on a tool call's raw argument text against the tool's input schema.
pub fn check_tool_call(
    hook: &BuiltinHook,
    raw_args: &str,
    schema: Option<&Value>,
) -> Option<Failure> {
    let BuiltinCheck::ToolCallJson(p) = &hook.check else {
        return None;
    };
    let text = if raw_args.trim().is_empty() {
        "{}"
    } else {
        raw_args
    };
    let reason = match serde_json::from_str::<Value>(text) {
        Err(e) => format!("arguments are not valid JSON ({e})"),
        Ok(v) if !v.is_object() => format!(
            "arguments must be a JSON object, got {}",
            crate::record::json_kind(&v)
        ),
        Ok(v) => {
            let errors = match (p.validate_schema, schema) {
                (true, Some(s)) => checks::schema_errors(s, &v),
                _ => Vec::new(),
            };
            if errors.is_empty() {
                return None;
            }
            errors.join("; ")
        }
    };
    Some(Failure {
        reason,
        vars: Map::new(),
        fixed: None,
    })
}

/// The feedback message for a failed built-in hook: its role and text (the `feedback` template, or the
/// bare reason without one). A template that fails to render falls back to the reason.
pub fn feedback(
    hook: &BuiltinHook,
    failure: &Failure,
    tool: Option<&str>,
    attempt: u32,
    default_role: FeedbackRole,
) -> (FeedbackRole, String) {
    let Some(Feedback { role, template }) = &hook.feedback else {
        return (default_role, failure.reason.clone());
    };
    let mut vars = failure.vars.clone();
    vars.insert("check".into(), json!(hook.check.kind()));
    vars.insert("reason".into(), json!(failure.reason));
    vars.insert("tool".into(), json!(tool.unwrap_or_default()));
    vars.insert("attempt".into(), json!(attempt));
    vars.insert("max_retries".into(), json!(hook.max_retries));
    for k in ["limit", "terms", "numbers"] {
        vars.entry(k).or_insert(Value::Null);
    }
    let text = FEEDBACK_ENV
        .render_str(template, Value::Object(vars))
        .unwrap_or_else(|_| failure.reason.clone());
    (*role, text)
}

/// Feedback templates are rendered with a plain environment, built once: creating one registers
/// every default filter, which cost more than the render itself.
static FEEDBACK_ENV: std::sync::LazyLock<minijinja::Environment<'static>> =
    std::sync::LazyLock::new(minijinja::Environment::new);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::hooks::{ReplyLengthParams, ToolCallJsonParams};
    use crate::harness::OnFail;

    fn builtin(check: BuiltinCheck, feedback: Option<Feedback>) -> BuiltinHook {
        BuiltinHook {
            check,
            on_fail: OnFail::Retry,
            max_retries: 1,
            feedback,
        }
    }

    #[test]
    fn exit_codes_and_json_map_to_decisions() {
        let exit = |code, stdout: &str, stderr: &str| Ended::Exit {
            code: Some(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
        };
        assert_eq!(decide(exit(0, "", "")), Decision::Allow);
        assert_eq!(
            decide(exit(2, "", "too many\n")),
            Decision::Block("too many".into())
        );
        assert!(matches!(decide(exit(1, "", "oops")), Decision::Error(_)));
        let deny = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#;
        assert_eq!(decide(exit(0, deny, "")), Decision::Block("no".into()));
        let upd = r#"{"hookSpecificOutput":{"updatedInput":{"quantity":20}}}"#;
        assert_eq!(
            decide(exit(0, upd, "")),
            Decision::Modify(json!({"quantity": 20}))
        );
        assert_eq!(decide(Ended::TimedOut), Decision::TimedOut);
    }

    #[test]
    fn builtin_checks_fail_with_vars_and_fixes() {
        let h = builtin(
            BuiltinCheck::ReplyLength(ReplyLengthParams { max_chars: Some(4) }),
            Some(Feedback {
                role: FeedbackRole::User,
                template: "≤{{ limit }} ({{ attempt }}/{{ max_retries }})".into(),
            }),
        );
        let f = check_text(&h, None, "一二三。四五六", 100, &[]).unwrap();
        assert_eq!(f.fixed.as_deref(), Some("一二三。"));
        assert_eq!(
            feedback(&h, &f, None, 1, FeedbackRole::User),
            (FeedbackRole::User, "≤4 (1/1)".to_string())
        );
        assert!(check_text(&h, None, "一二", 100, &[]).is_none());
        let j = builtin(
            BuiltinCheck::ToolCallJson(ToolCallJsonParams::default()),
            None,
        );
        let schema = json!({"type": "object", "properties": {"product_id": {"type": "string"}}, "required": ["product_id"]});
        assert!(check_tool_call(&j, r#"{"product_id":"p1"}"#, Some(&schema)).is_none());
        assert!(check_tool_call(&j, r#"{"product_id":"p1""#, Some(&schema))
            .unwrap()
            .reason
            .contains("not valid JSON"));
        assert!(check_tool_call(&j, r#"{"product_id":1}"#, Some(&schema))
            .unwrap()
            .reason
            .contains("must be string"));
    }
}
