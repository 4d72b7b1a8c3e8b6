//! `hooks/hooks.json`: checks that run around the model, in the Claude Code hooks shape plus
//! built-in declarative checks. This module is the *schema*; the agent runtime executes it.
//!
//! ```json
//! {"hooks": {
//!   "PreToolUse": [
//!     {"matcher": "create_purchase_link",
//!      "hooks": [{"type": "command", "command": "hooks/limit_quantity.sh", "timeout": 5}]},
//!     {"matcher": "*",
//!      "hooks": [{"type": "builtin", "check": "tool_call_json", "on_fail": "retry", "max_retries": 1,
//!                 "feedback": {"as": "tool_error", "template": "参数无效 / invalid arguments: {{ reason }}"}}]}],
//!   "Stop": [
//!     {"hooks": [{"type": "builtin", "check": "reply_length", "on_fail": "retry", "max_retries": 2,
//!                 "feedback": {"as": "user", "template": "回复超过 {{ limit }} 字，请精简。"}},
//!                {"type": "builtin", "check": "banned_terms", "params": {"terms_file": "hooks/banned_terms.txt"},
//!                 "on_fail": "fix"}]}]
//! }}
//! ```
//!
//! * **Events** ([`HookEvent`]) are the Claude Code event names. Only tool events
//!   (`PreToolUse`, `PostToolUse`, `PostToolUseFailure`, `PermissionRequest`) take a `matcher`:
//!   a case-sensitive regex that must match a whole tool name (it is anchored as `^(?:…)$`), or
//!   `*`/empty/absent for every tool. A matcher that matches none of the harness's tools is an
//!   error, which catches hooks left behind by a tool rename.
//! * **Command hooks** (`"type": "command"`): `command` is an executable file inside the harness,
//!   relative to its root, run with optional `args`; it gets the Claude Code hook input JSON on
//!   stdin. Exit 0 = pass, exit 2 = block with stderr fed back to the model (as a tool error for
//!   `PreToolUse`, as a user message for `Stop`), other codes = non-blocking error. `timeout` in
//!   seconds (1..=600) defaults to `[hooks] default_timeout_s` of `harness.toml`.
//! * **Built-in hooks** (`"type": "builtin"`): `check` names a [`BuiltinCheck`], `params` holds
//!   its typed parameters, and
//!   * `on_fail`: `retry` (send `feedback` and let the model try again, at most `max_retries`
//!     times, then block), `block` (refuse: the tool call is denied, or the reply is not sent) or
//!     `fix` (apply the check's deterministic repair: truncate an over-long reply at a sentence
//!     boundary, mask banned terms; only `reply_length` and `banned_terms` can fix);
//!   * `max_retries`: 0..=5, default 1;
//!   * `feedback`: how the failure is shown to the model: `as` = `user` (a user turn),
//!     `tool_error` (the tool result, only for tool events) or `system` (a system note), and a
//!     minijinja `template` with the variables `check`, `reason`, `limit`, `terms`, `numbers`,
//!     `tool`, `attempt` and `max_retries`. Without `feedback` the runtime sends `reason`.

use std::fmt;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::files::FileSet;
use super::manifest::TIMEOUT_RANGE_S;
use super::paths::normalize_relative;
use super::problem::{json_problem, Problem};

/// Hook events, named as in Claude Code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookEvent {
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    PermissionRequest,
    UserPromptSubmit,
    Stop,
    SubagentStop,
    Notification,
    PreCompact,
    SessionStart,
    SessionEnd,
}

impl HookEvent {
    pub const ALL: [HookEvent; 11] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::PermissionRequest,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::SubagentStop,
        HookEvent::Notification,
        HookEvent::PreCompact,
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::Notification => "Notification",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
        }
    }

    pub fn from_name(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Events about one tool call, whose groups select tools with a `matcher`.
    pub fn is_tool_event(self) -> bool {
        matches!(
            self,
            HookEvent::PreToolUse
                | HookEvent::PostToolUse
                | HookEvent::PostToolUseFailure
                | HookEvent::PermissionRequest
        )
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The parsed hooks file: events in file order, each with its matcher groups in file order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HooksConfig {
    pub events: Vec<EventHooks>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct EventHooks {
    pub event: HookEvent,
    pub groups: Vec<MatcherGroup>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatcherGroup {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    pub hooks: Vec<Hook>,
}

impl MatcherGroup {
    /// Whether this group applies to `tool`: `None`, `""` and `"*"` match every tool; anything
    /// else is a regex that must match the whole name. An invalid regex matches nothing
    /// (validation reports it).
    pub fn matches(&self, tool: &str) -> bool {
        match self.compiled_matcher() {
            Ok(None) => true,
            Ok(Some(re)) => re.is_match(tool),
            Err(_) => false,
        }
    }

    /// The anchored matcher regex, or `None` when the group matches every tool.
    pub fn compiled_matcher(&self) -> Result<Option<Regex>, regex::Error> {
        match self.matcher.as_deref() {
            None | Some("") | Some("*") => Ok(None),
            Some(m) => Regex::new(&format!("^(?:{m})$")).map(Some),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Hook {
    Command(CommandHook),
    Builtin(BuiltinHook),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandHook {
    /// Executable file, relative to the harness root.
    pub command: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Seconds; `None` means `[hooks] default_timeout_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
}

/// A built-in declarative hook. On disk `check` and `params` sit side by side in the hook object;
/// in memory they form one typed [`BuiltinCheck`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawBuiltinHook", into = "RawBuiltinHook")]
pub struct BuiltinHook {
    pub check: BuiltinCheck,
    pub on_fail: OnFail,
    pub max_retries: u32,
    pub feedback: Option<Feedback>,
}

pub const MAX_RETRIES: u32 = 5;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "check", content = "params", rename_all = "snake_case")]
pub enum BuiltinCheck {
    /// The reply has at most `max_chars` characters (default: `limits.max_reply_chars`).
    ReplyLength(ReplyLengthParams),
    /// The text contains none of the terms (substring match; case-insensitive unless
    /// `case_sensitive`). Terms come from `terms` and/or `terms_file` (one per line, `#` comments).
    BannedTerms(BannedTermsParams),
    /// Every number of the given kinds in the reply (prices, stock counts, discounts) appears in
    /// a tool result of the current turn, from the `sources` tools (all tools when empty).
    GroundedNumbers(GroundedNumbersParams),
    /// Tool-call arguments are a JSON object and, if `validate_schema`, satisfy the tool's
    /// `inputSchema` (required keys, types, enums).
    ToolCallJson(ToolCallJsonParams),
}

impl BuiltinCheck {
    pub fn kind(&self) -> &'static str {
        match self {
            BuiltinCheck::ReplyLength(_) => "reply_length",
            BuiltinCheck::BannedTerms(_) => "banned_terms",
            BuiltinCheck::GroundedNumbers(_) => "grounded_numbers",
            BuiltinCheck::ToolCallJson(_) => "tool_call_json",
        }
    }

    /// Events at which the check has something to look at.
    pub fn allowed_events(&self) -> &'static [HookEvent] {
        match self {
            BuiltinCheck::ReplyLength(_) | BuiltinCheck::GroundedNumbers(_) => {
                &[HookEvent::Stop, HookEvent::SubagentStop]
            }
            BuiltinCheck::BannedTerms(_) => &[
                HookEvent::Stop,
                HookEvent::SubagentStop,
                HookEvent::UserPromptSubmit,
            ],
            BuiltinCheck::ToolCallJson(_) => &[HookEvent::PreToolUse],
        }
    }

    /// Whether the check has a deterministic repair for `on_fail = "fix"`.
    pub fn can_fix(&self) -> bool {
        matches!(
            self,
            BuiltinCheck::ReplyLength(_) | BuiltinCheck::BannedTerms(_)
        )
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplyLengthParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BannedTermsParams {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub terms: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terms_file: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub case_sensitive: bool,
}

impl BannedTermsParams {
    /// `terms` followed by the lines of `terms_file` (trimmed; blank lines and `#` comments
    /// skipped). A missing or unreadable `terms_file` contributes nothing; validation reports it.
    pub fn all_terms(&self, files: &FileSet) -> Vec<String> {
        let mut terms = self.terms.clone();
        let from_file = self
            .terms_file
            .as_deref()
            .and_then(|f| normalize_relative("", f).ok());
        if let Some(text) = from_file.and_then(|key| super::files::text(files, &key).ok()) {
            terms.extend(
                text.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with('#'))
                    .map(str::to_string),
            );
        }
        terms
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroundedNumbersParams {
    pub kinds: Vec<NumberKind>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NumberKind {
    /// Amounts next to a currency mark: ¥, 元, 块, RMB, $.
    Price,
    /// Counts next to stock words: 件, 库存, 剩, left, in stock.
    Stock,
    /// Discounts: 折, % off, 减, 满…减.
    Discount,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallJsonParams {
    #[serde(default = "yes")]
    pub validate_schema: bool,
}

impl Default for ToolCallJsonParams {
    fn default() -> Self {
        ToolCallJsonParams {
            validate_schema: true,
        }
    }
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnFail {
    Retry,
    Block,
    Fix,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Feedback {
    #[serde(rename = "as")]
    pub role: FeedbackRole,
    pub template: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FeedbackRole {
    User,
    ToolError,
    System,
}

/// The on-disk shape of a built-in hook (without its `type` tag, which [`Hook`] consumes).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBuiltinHook {
    check: String,
    #[serde(default, skip_serializing_if = "is_empty_object")]
    params: Value,
    on_fail: OnFail,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_retries: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    feedback: Option<Feedback>,
}

fn is_empty_object(v: &Value) -> bool {
    v.as_object().is_some_and(Map::is_empty)
}

impl TryFrom<RawBuiltinHook> for BuiltinHook {
    type Error = String;

    fn try_from(raw: RawBuiltinHook) -> Result<Self, String> {
        let params = if raw.params.is_null() {
            Value::Object(Map::new())
        } else {
            raw.params
        };
        let check =
            serde_json::from_value(serde_json::json!({"check": raw.check, "params": params}))
                .map_err(|e| format!("check {:?}: {e}", raw.check))?;
        Ok(BuiltinHook {
            check,
            on_fail: raw.on_fail,
            max_retries: raw.max_retries.unwrap_or(1),
            feedback: raw.feedback,
        })
    }
}

impl From<BuiltinHook> for RawBuiltinHook {
    fn from(h: BuiltinHook) -> Self {
        let tagged = serde_json::to_value(&h.check).unwrap_or(Value::Null);
        RawBuiltinHook {
            check: h.check.kind().to_string(),
            params: tagged
                .get("params")
                .cloned()
                .unwrap_or(Value::Object(Map::new())),
            on_fail: h.on_fail,
            max_retries: Some(h.max_retries),
            feedback: h.feedback,
        }
    }
}

impl HooksConfig {
    /// Parses a hooks file. Every event, group and hook is parsed on its own, so one bad hook
    /// does not hide the problems of the others; what parses is kept.
    pub fn parse(file: &str, text: &str) -> (HooksConfig, Vec<Problem>) {
        let mut problems = Vec::new();
        let mut config = HooksConfig::default();
        let root: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => return (config, vec![json_problem(file, &e)]),
        };
        let Some(root) = root.as_object() else {
            return (
                config,
                vec![Problem::file(
                    file,
                    "must be a JSON object {\"hooks\": {…}}",
                )],
            );
        };
        for key in root
            .keys()
            .filter(|k| !matches!(k.as_str(), "hooks" | "description"))
        {
            problems.push(Problem::field(
                file,
                key.as_str(),
                "unknown field (expected \"hooks\" and optional \"description\")",
            ));
        }
        let events = match root.get("hooks") {
            Some(Value::Object(events)) => events,
            Some(_) => {
                return (
                    config,
                    vec![Problem::field(
                        file,
                        "hooks",
                        "must be an object mapping event names to matcher groups",
                    )],
                )
            }
            None => return (config, vec![Problem::field(file, "hooks", "missing")]),
        };
        for (name, groups) in events {
            let field = format!("hooks.{name}");
            let Some(event) = HookEvent::from_name(name) else {
                let known: Vec<_> = HookEvent::ALL.iter().map(|e| e.as_str()).collect();
                problems.push(Problem::field(
                    file,
                    field,
                    format!(
                        "unknown hook event {name:?}; known events: {}",
                        known.join(", ")
                    ),
                ));
                continue;
            };
            let Some(groups) = groups.as_array() else {
                problems.push(Problem::field(
                    file,
                    field,
                    "must be an array of matcher groups",
                ));
                continue;
            };
            let mut parsed = Vec::new();
            for (i, group) in groups.iter().enumerate() {
                match parse_group(group) {
                    Ok(g) => parsed.push(g),
                    Err((sub, message)) => {
                        problems.push(Problem::field(file, format!("{field}[{i}]{sub}"), message))
                    }
                }
            }
            config.events.push(EventHooks {
                event,
                groups: parsed,
            });
        }
        (config, problems)
    }

    /// All hooks, flattened, with the event and group they belong to (in file order).
    pub fn iter(&self) -> impl Iterator<Item = (HookEvent, &MatcherGroup, &Hook)> {
        self.events.iter().flat_map(|e| {
            e.groups
                .iter()
                .flat_map(move |g| g.hooks.iter().map(move |h| (e.event, g, h)))
        })
    }

    /// The file text for this configuration (pretty JSON, two-space indent, final newline).
    pub fn to_json_text(&self) -> String {
        let mut hooks = Map::new();
        for e in &self.events {
            hooks.insert(
                e.event.as_str().to_string(),
                serde_json::to_value(&e.groups).unwrap_or(Value::Null),
            );
        }
        let mut text = serde_json::to_string_pretty(&serde_json::json!({ "hooks": hooks }))
            .unwrap_or_default();
        text.push('\n');
        text
    }
}

/// Parses one matcher group, hook by hook; the error carries the sub-path (`.hooks[1]`).
fn parse_group(group: &Value) -> Result<MatcherGroup, (String, String)> {
    let Some(obj) = group.as_object() else {
        return Err((
            String::new(),
            "must be an object {\"matcher\": …, \"hooks\": […]}".into(),
        ));
    };
    if let Some(key) = obj
        .keys()
        .find(|k| !matches!(k.as_str(), "matcher" | "hooks"))
    {
        return Err((
            format!(".{key}"),
            "unknown field (expected \"matcher\" and \"hooks\")".into(),
        ));
    }
    let matcher = match obj.get("matcher") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) => Some(m.clone()),
        Some(_) => {
            return Err((
                ".matcher".into(),
                "must be a string (a tool-name regex, or \"*\")".into(),
            ))
        }
    };
    let Some(hooks) = obj.get("hooks").and_then(Value::as_array) else {
        return Err((".hooks".into(), "must be an array of hooks".into()));
    };
    let mut parsed = Vec::new();
    for (j, hook) in hooks.iter().enumerate() {
        parsed.push(
            serde_json::from_value(hook.clone())
                .map_err(|e| (format!(".hooks[{j}]"), e.to_string()))?,
        );
    }
    Ok(MatcherGroup {
        matcher,
        hooks: parsed,
    })
}

/// What hook validation needs to know about the rest of the harness.
pub struct HookCheckContext<'a> {
    pub files: &'a FileSet,
    pub tool_names: &'a [&'a str],
    pub max_reply_chars_range: (u64, u64),
}

/// Semantic checks: matchers against real tools, command files, timeouts, check/event fit,
/// parameter ranges and feedback templates.
pub fn validate_hooks(
    file: &str,
    config: &HooksConfig,
    cx: &HookCheckContext<'_>,
    problems: &mut Vec<Problem>,
) {
    for eh in &config.events {
        for (i, group) in eh.groups.iter().enumerate() {
            let gfield = format!("hooks.{}[{i}]", eh.event);
            validate_matcher(file, &gfield, eh.event, group, cx.tool_names, problems);
            for (j, hook) in group.hooks.iter().enumerate() {
                let hfield = format!("{gfield}.hooks[{j}]");
                match hook {
                    Hook::Command(c) => validate_command(file, &hfield, c, cx.files, problems),
                    Hook::Builtin(b) => validate_builtin(file, &hfield, eh.event, b, cx, problems),
                }
            }
        }
    }
}

fn validate_matcher(
    file: &str,
    gfield: &str,
    event: HookEvent,
    group: &MatcherGroup,
    tools: &[&str],
    problems: &mut Vec<Problem>,
) {
    let field = format!("{gfield}.matcher");
    let everything = matches!(group.matcher.as_deref(), None | Some("") | Some("*"));
    if !event.is_tool_event() {
        if !everything {
            problems.push(Problem::field(
                file,
                field,
                format!("{event} is not a tool event; leave the matcher out (or \"*\")"),
            ));
        }
        return;
    }
    match group.compiled_matcher() {
        Err(e) => problems.push(Problem::field(file, field, format!("invalid regex: {e}"))),
        Ok(Some(re)) if !tools.iter().any(|t| re.is_match(t)) => problems.push(Problem::field(
            file,
            field,
            format!(
                "{:?} matches none of the harness's tools",
                group.matcher.as_deref().unwrap_or_default()
            ),
        )),
        Ok(_) => {}
    }
}

fn validate_command(
    file: &str,
    hfield: &str,
    c: &CommandHook,
    files: &FileSet,
    problems: &mut Vec<Problem>,
) {
    let field = format!("{hfield}.command");
    match normalize_relative("", &c.command) {
        Err(e) => problems.push(Problem::field(file, field, format!("{:?}: {e}", c.command))),
        Ok(key) => match files.get(&key) {
            None => problems.push(Problem::field(
                file,
                field,
                format!("{:?}: no such file in the harness directory", c.command),
            )),
            Some(f) if !f.executable => problems.push(Problem::field(
                file,
                field,
                format!("{:?} is not executable (chmod +x)", c.command),
            )),
            Some(_) => {}
        },
    }
    if let Some(t) = c.timeout {
        if !TIMEOUT_RANGE_S.contains(&t) {
            problems.push(Problem::field(
                file,
                format!("{hfield}.timeout"),
                format!(
                    "{t} is out of range {}..={} seconds",
                    TIMEOUT_RANGE_S.start(),
                    TIMEOUT_RANGE_S.end()
                ),
            ));
        }
    }
}

fn validate_builtin(
    file: &str,
    hfield: &str,
    event: HookEvent,
    b: &BuiltinHook,
    cx: &HookCheckContext<'_>,
    problems: &mut Vec<Problem>,
) {
    let kind = b.check.kind();
    if !b.check.allowed_events().contains(&event) {
        let allowed: Vec<_> = b
            .check
            .allowed_events()
            .iter()
            .map(|e| e.as_str())
            .collect();
        problems.push(Problem::field(
            file,
            format!("{hfield}.check"),
            format!(
                "{kind} cannot run on {event}; use it on {}",
                allowed.join(" or ")
            ),
        ));
    }
    if b.on_fail == OnFail::Fix && !b.check.can_fix() {
        problems.push(Problem::field(
            file,
            format!("{hfield}.on_fail"),
            format!("{kind} has no automatic fix; use \"retry\" or \"block\""),
        ));
    }
    if b.on_fail == OnFail::Retry && event == HookEvent::UserPromptSubmit {
        problems.push(Problem::field(
            file,
            format!("{hfield}.on_fail"),
            "the viewer's message cannot be retried; use \"block\" or \"fix\"",
        ));
    }
    if b.max_retries > MAX_RETRIES || (b.on_fail == OnFail::Retry && b.max_retries == 0) {
        problems.push(Problem::field(
            file,
            format!("{hfield}.max_retries"),
            format!("{} is out of range 1..={MAX_RETRIES} for on_fail = retry (0..={MAX_RETRIES} otherwise)", b.max_retries),
        ));
    }
    let params = format!("{hfield}.params");
    match &b.check {
        BuiltinCheck::ReplyLength(p) => {
            let (lo, hi) = cx.max_reply_chars_range;
            if let Some(n) = p.max_chars.filter(|n| !(lo..=hi).contains(n)) {
                problems.push(Problem::field(
                    file,
                    format!("{params}.max_chars"),
                    format!("{n} is out of range {lo}..={hi}"),
                ));
            }
        }
        BuiltinCheck::BannedTerms(p) => {
            if p.terms.is_empty() && p.terms_file.is_none() {
                problems.push(Problem::field(
                    file,
                    params.clone(),
                    "give \"terms\" and/or \"terms_file\"",
                ));
            }
            if let Some(i) = p.terms.iter().position(|t| t.trim().is_empty()) {
                problems.push(Problem::field(
                    file,
                    format!("{params}.terms[{i}]"),
                    "is empty",
                ));
            }
            if let Some(tf) = &p.terms_file {
                let field = format!("{params}.terms_file");
                match normalize_relative("", tf) {
                    Err(e) => problems.push(Problem::field(file, field, format!("{tf:?}: {e}"))),
                    Ok(key) => match super::files::text(cx.files, &key) {
                        Err(_) => problems.push(Problem::field(
                            file,
                            field,
                            format!("{tf:?}: no such text file in the harness directory"),
                        )),
                        Ok(_) if p.all_terms(cx.files).len() == p.terms.len() => problems.push(
                            Problem::field(file, field, format!("{tf:?} lists no terms")),
                        ),
                        Ok(_) => {}
                    },
                }
            }
        }
        BuiltinCheck::GroundedNumbers(p) => {
            if p.kinds.is_empty() {
                problems.push(Problem::field(
                    file,
                    format!("{params}.kinds"),
                    "list at least one of price, stock, discount",
                ));
            }
            for (i, s) in p.sources.iter().enumerate() {
                if !cx.tool_names.contains(&s.as_str()) {
                    problems.push(Problem::field(
                        file,
                        format!("{params}.sources[{i}]"),
                        format!("{s:?} is not a tool of this harness"),
                    ));
                }
            }
        }
        BuiltinCheck::ToolCallJson(_) => {}
    }
    if let Some(fb) = &b.feedback {
        if fb.role == FeedbackRole::ToolError && !event.is_tool_event() {
            problems.push(Problem::field(
                file,
                format!("{hfield}.feedback.as"),
                format!("tool_error feedback needs a tool event, not {event}"),
            ));
        }
        if let Err(e) = minijinja::Environment::new().template_from_str(&fb.template) {
            problems.push(Problem::field(
                file,
                format!("{hfield}.feedback.template"),
                format!("does not compile: {e}"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_command_and_builtin_hooks_in_order() {
        let text = r#"{"hooks":{"Stop":[{"hooks":[{"type":"builtin","check":"reply_length","params":{"max_chars":80},"on_fail":"retry","max_retries":2,"feedback":{"as":"user","template":"短一点 {{ limit }}"}}]}],
            "PreToolUse":[{"matcher":"a|b","hooks":[{"type":"command","command":"hooks/x.sh","timeout":5}]}]}}"#;
        let (cfg, problems) = HooksConfig::parse("hooks/hooks.json", text);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(cfg.events[0].event, HookEvent::Stop);
        assert_eq!(cfg.events[1].event, HookEvent::PreToolUse);
        let Hook::Builtin(b) = &cfg.events[0].groups[0].hooks[0] else {
            panic!("builtin expected")
        };
        assert_eq!(
            b.check,
            BuiltinCheck::ReplyLength(ReplyLengthParams {
                max_chars: Some(80)
            })
        );
        assert_eq!(b.max_retries, 2);
        let g = &cfg.events[1].groups[0];
        assert!(g.matches("a") && g.matches("b") && !g.matches("ab"));
    }

    #[test]
    fn serialization_round_trips() {
        let text = r#"{"hooks":{"Stop":[{"hooks":[{"type":"builtin","check":"banned_terms","params":{"terms":["最"]},"on_fail":"fix","max_retries":1}]}]}}"#;
        let (cfg, problems) = HooksConfig::parse("h.json", text);
        assert!(problems.is_empty(), "{problems:?}");
        let (again, problems) = HooksConfig::parse("h.json", &cfg.to_json_text());
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(again, cfg);
    }

    #[test]
    fn bad_hooks_are_reported_each_with_its_path() {
        let text = r#"{"hooks":{"Stop":[{"hooks":[{"type":"builtin","check":"nope","on_fail":"retry"}]},
            {"hooks":[{"type":"builtin","check":"reply_length","params":{"max":3},"on_fail":"retry"}]}]}}"#;
        let (_, problems) = HooksConfig::parse("h.json", text);
        let fields: Vec<_> = problems.iter().map(|p| p.field.clone().unwrap()).collect();
        assert_eq!(fields, ["hooks.Stop[0].hooks[0]", "hooks.Stop[1].hooks[0]"]);
        assert!(problems[0].message.contains("nope"), "{}", problems[0]);
        assert!(problems[1].message.contains("max"), "{}", problems[1]);
    }
}
