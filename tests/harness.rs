//! Harness loading, validation rules, rendering, hashing, round-trip and the `hat harness` CLI.
//!
//! Broken harnesses are built by copying a sample into a temp dir and breaking one thing; each
//! test asserts that the problem names the file and the field (or line) at fault.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

mod harness_support;

use harness_support::placed_in_context;
use hat::harness::{check_dir, Harness, HarnessFile, LiveContext, Problem, SkillsMode};
use hat::record::Role;

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("harness-samples")
        .join(name)
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap(); // fs::copy keeps the permission bits
        }
    }
}

/// A fresh copy of a sample harness in a temp dir; returns (guard, harness dir).
fn copy_of(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(name);
    copy_dir(&sample(name), &dir);
    (tmp, dir)
}

fn edit(dir: &Path, rel: &str, f: impl FnOnce(String) -> String) {
    let path = dir.join(rel);
    let text = fs::read_to_string(&path).unwrap();
    let new = f(text.clone());
    assert_ne!(new, text, "edit of {rel} changed nothing");
    fs::write(&path, new).unwrap();
}

/// The problems about `file`, after asserting there is at least one whose field contains `field`
/// and whose message contains `needle`.
fn expect_problem(dir: &Path, file: &str, field: &str, needle: &str) -> Vec<Problem> {
    let problems = check_dir(dir);
    let hit = problems.iter().any(|p| {
        p.file == file
            && p.field.as_deref().is_some_and(|f| f.contains(field))
            && p.message.contains(needle)
    });
    assert!(
        hit,
        "no problem in {file} field ~{field:?} message ~{needle:?}; got:\n{}",
        show(&problems)
    );
    problems
}

fn show(problems: &[Problem]) -> String {
    problems.iter().map(|p| format!("  {p}\n")).collect()
}

// ---------------------------------------------------------------------------------------------
// Samples

#[test]
fn samples_are_valid() {
    for name in ["taolive", "aftersales"] {
        let problems = check_dir(sample(name));
        assert!(problems.is_empty(), "{name}:\n{}", show(&problems));
        let h = Harness::load(sample(name)).unwrap();
        assert!(h.validate().is_empty());
        assert_eq!(h.name(), name);
    }
}

#[test]
fn taolive_uses_the_canonical_ids() {
    let h = Harness::load(sample("taolive")).unwrap();
    let mut tools: Vec<&str> = h.tools().iter().map(|t| t.name.as_str()).collect();
    tools.sort();
    assert_eq!(
        tools,
        [
            "check_inventory",
            "create_purchase_link",
            "get_after_sales_policy",
            "get_order_status",
            "get_product_detail",
            "get_promotions",
            "get_room_state",
            "get_shipping_info",
            "load_skill",
            "search_faq",
            "search_products",
            "update_presentation_order",
        ]
    );
    // Tool file names are the canonical ids too (the simulator addresses tools by file).
    for t in h.tools() {
        assert_eq!(t.file, format!("tools/{}.json", t.name));
    }
    let params = |name: &str| h.tool(name).unwrap().parameter_names();
    assert_eq!(
        params("search_products"),
        ["keyword", "category", "max_price"]
    );
    assert_eq!(
        params("create_purchase_link"),
        ["product_id", "sku_id", "quantity"]
    );
    assert_eq!(params("get_after_sales_policy"), ["product_id", "topic"]);
    assert_eq!(params("update_presentation_order"), ["product_ids"]);
    assert!(params("get_room_state").is_empty());
    let topic =
        &h.tool("get_after_sales_policy").unwrap().input_schema["properties"]["topic"]["enum"];
    assert_eq!(
        topic,
        &serde_json::json!(["return", "exchange", "warranty", "refund"])
    );

    let mut skills: Vec<&str> = h.skills().iter().map(|s| s.name()).collect();
    assert_eq!(
        skills[0], "compliance-guard",
        "[skills] order puts the always-on skill first"
    );
    skills.sort();
    assert_eq!(
        skills,
        [
            "after-sales-care",
            "casual-chat",
            "clarify-question",
            "compliance-guard",
            "faq-reply",
            "presentation-order",
            "product-qa",
            "promotion-explainer",
            "purchase-guide",
            "shipping-info",
            "silent-refusal",
            "size-advice",
            "stock-alert",
        ]
    );
    assert_eq!(h.skills_mode(), SkillsMode::Tool);
}

#[test]
fn taolive_quantity_hook_blocks_over_the_limit() {
    let h = Harness::load(sample("taolive")).unwrap();
    let script = h.resolve_path("hooks/limit_quantity.sh").unwrap();
    let run = |input: &str| {
        let mut child = Command::new("sh")
            .arg(&script)
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let blocked = run(
        r#"{"hook_event_name":"PreToolUse","tool_name":"create_purchase_link","tool_input":{"product_id":"p1","quantity": 25}}"#,
    );
    assert_eq!(blocked.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&blocked.stderr).contains("20"));
    let allowed = run(
        r#"{"tool_name":"create_purchase_link","tool_input":{"product_id":"p1","quantity":3}}"#,
    );
    assert_eq!(allowed.status.code(), Some(0));
}

// ---------------------------------------------------------------------------------------------
// One test per validation rule

#[test]
fn bad_skill_name() {
    let (_t, dir) = copy_of("aftersales");
    fs::rename(
        dir.join("playbooks/refund-request"),
        dir.join("playbooks/Refund--Request"),
    )
    .unwrap();
    edit(&dir, "playbooks/Refund--Request/SKILL.md", |s| {
        s.replace("name: refund-request", "name: Refund--Request")
    });
    expect_problem(
        &dir,
        "playbooks/Refund--Request/SKILL.md",
        "front matter field 'name'",
        "must be 1-64 characters",
    );
}

#[test]
fn skill_name_must_equal_directory() {
    let (_t, dir) = copy_of("aftersales");
    edit(&dir, "playbooks/refund-request/SKILL.md", |s| {
        s.replace("name: refund-request", "name: refunds")
    });
    expect_problem(
        &dir,
        "playbooks/refund-request/SKILL.md",
        "front matter field 'name'",
        "directory name",
    );
}

#[test]
fn skill_description_too_long() {
    let (_t, dir) = copy_of("aftersales");
    let long = "很".repeat(1025);
    edit(&dir, "playbooks/delivery-delay/SKILL.md", |s| {
        let start = s.find("description:").unwrap();
        let end = start + s[start..].find('\n').unwrap();
        format!("{}description: {long}{}", &s[..start], &s[end..])
    });
    expect_problem(
        &dir,
        "playbooks/delivery-delay/SKILL.md",
        "front matter field 'description'",
        "has 1025",
    );
}

#[test]
fn duplicate_tool_name() {
    let (_t, dir) = copy_of("aftersales");
    fs::copy(
        dir.join("tools/lookup_order.json"),
        dir.join("tools/lookup_order_v2.json"),
    )
    .unwrap();
    expect_problem(
        &dir,
        "tools/lookup_order_v2.json",
        "name",
        "duplicate tool name \"lookup_order\"",
    );
}

#[test]
fn bad_tool_name() {
    let (_t, dir) = copy_of("aftersales");
    edit(&dir, "tools/lookup_order.json", |s| {
        s.replace("\"name\": \"lookup_order\"", "\"name\": \"lookup order\"")
    });
    expect_problem(&dir, "tools/lookup_order.json", "name", "1-64 characters");
}

#[test]
fn input_schema_must_be_an_object_schema() {
    let (_t, dir) = copy_of("aftersales");
    fs::write(
        dir.join("tools/ping.json"),
        r#"{"name": "ping", "description": "Check the service.", "inputSchema": {"type": "array"}}"#,
    )
    .unwrap();
    fs::write(
        dir.join("tools/pong.json"),
        r#"{"name": "pong", "description": "x", "inputSchema": "none"}"#,
    )
    .unwrap();
    edit(&dir, "tools/request_refund.json", |s| {
        s.replacen("\"order_id\",", "\"order_no\",", 1)
    });
    let problems = expect_problem(
        &dir,
        "tools/ping.json",
        "inputSchema.type",
        "must be \"object\"",
    );
    assert!(
        problems
            .iter()
            .any(|p| p.file == "tools/pong.json" && p.field.as_deref() == Some("inputSchema")),
        "{}",
        show(&problems)
    );
    assert!(
        problems
            .iter()
            .any(|p| p.file == "tools/request_refund.json"
                && p.field.as_deref() == Some("inputSchema.required[0]")),
        "{}",
        show(&problems)
    );
}

#[test]
fn unknown_hook_event() {
    let (_t, dir) = copy_of("aftersales");
    edit(&dir, "hooks/hooks.json", |s| {
        s.replace("\"Stop\"", "\"BeforeReply\"")
    });
    expect_problem(
        &dir,
        "hooks/hooks.json",
        "hooks.BeforeReply",
        "unknown hook event",
    );
}

#[test]
fn matcher_must_match_a_tool() {
    let (_t, dir) = copy_of("aftersales");
    edit(&dir, "hooks/hooks.json", |s| {
        s.replace("\"matcher\": \"request_refund\"", "\"matcher\": \"refund\"")
    });
    expect_problem(
        &dir,
        "hooks/hooks.json",
        "hooks.PreToolUse[0].matcher",
        "matches none",
    );
}

#[test]
fn missing_or_non_executable_hook_command() {
    let (_t, dir) = copy_of("aftersales");
    edit(&dir, "hooks/hooks.json", |s| {
        s.replace("hooks/refund_guard.sh", "hooks/missing.sh")
    });
    expect_problem(
        &dir,
        "hooks/hooks.json",
        "hooks.PreToolUse[0].hooks[0].command",
        "no such file",
    );

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let (_t, dir) = copy_of("aftersales");
        fs::set_permissions(
            dir.join("hooks/refund_guard.sh"),
            fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        expect_problem(
            &dir,
            "hooks/hooks.json",
            "hooks.PreToolUse[0].hooks[0].command",
            "not executable",
        );
    }
}

#[test]
fn hook_timeout_and_builtin_rules() {
    let (_t, dir) = copy_of("aftersales");
    edit(&dir, "hooks/hooks.json", |s| {
        s.replace("\"timeout\": 5", "\"timeout\": 900")
            // grounded_numbers has no automatic fix and does not run on UserPromptSubmit.
            .replace("\"check\": \"banned_terms\", \"params\": {\"terms\": [\"card number\", \"CVV\", \"银行卡密码\"]}", "\"check\": \"grounded_numbers\", \"params\": {\"kinds\": [\"price\"], \"sources\": [\"no_such_tool\"]}")
    });
    let problems = expect_problem(
        &dir,
        "hooks/hooks.json",
        "hooks.PreToolUse[0].hooks[0].timeout",
        "out of range",
    );
    for field in [
        "hooks.UserPromptSubmit[0].hooks[0].check",
        "hooks.UserPromptSubmit[0].hooks[0].on_fail",
        "hooks.UserPromptSubmit[0].hooks[0].params.sources[0]",
    ] {
        assert!(
            problems.iter().any(|p| p.field.as_deref() == Some(field)),
            "missing {field}:\n{}",
            show(&problems)
        );
    }
}

#[test]
fn dotdot_escapes_are_refused_everywhere() {
    let (tmp, dir) = copy_of("aftersales");
    fs::write(tmp.path().join("outside.md"), "secret").unwrap();
    // skill reference
    edit(&dir, "playbooks/refund-request/SKILL.md", |s| {
        s + "\nSee [the secret](../../../outside.md).\n"
    });
    // template include
    edit(&dir, "templates/role.j2", |s| {
        s + "{% include \"../../outside.md\" %}\n"
    });
    // hook command
    edit(&dir, "hooks/hooks.json", |s| {
        s.replace("hooks/refund_guard.sh", "../outside.sh")
    });
    let problems = check_dir(&dir);
    let find = |file: &str, field: &str| {
        problems
            .iter()
            .find(|p| p.file == file && p.field.as_deref() == Some(field))
            .unwrap_or_else(|| panic!("no problem for {file} {field}:\n{}", show(&problems)))
    };
    let skill = find("playbooks/refund-request/SKILL.md", "body");
    assert!(
        skill.message.contains("leaves the harness directory"),
        "{skill}"
    );
    assert_eq!(skill.line, Some(11), "the reference's line in SKILL.md");
    let include = find("templates/role.j2", "include \"../../outside.md\"");
    assert!(
        include.message.contains("leaves the harness directory"),
        "{include}"
    );
    assert_eq!(include.line, Some(2));
    let hook = find("hooks/hooks.json", "hooks.PreToolUse[0].hooks[0].command");
    assert!(
        hook.message.contains("leaves the harness directory"),
        "{hook}"
    );

    // A path in harness.toml is structural: load() fails too, naming the field.
    let (_t2, dir2) = copy_of("aftersales");
    edit(&dir2, "harness.toml", |s| {
        s.replace(
            "pipeline = \"templates/pipeline.toml\"",
            "pipeline = \"../pipeline.toml\"",
        )
    });
    expect_problem(
        &dir2,
        "harness.toml",
        "prompts.pipeline",
        "leaves the harness directory",
    );
    let err = format!("{:#}", Harness::load(&dir2).unwrap_err());
    assert!(
        err.contains("harness.toml: field 'prompts.pipeline'"),
        "{err}"
    );
}

#[test]
fn absolute_paths_are_refused() {
    let (_t, dir) = copy_of("aftersales");
    edit(&dir, "hooks/hooks.json", |s| {
        s.replace("hooks/refund_guard.sh", "/bin/sh")
    });
    expect_problem(
        &dir,
        "hooks/hooks.json",
        "hooks.PreToolUse[0].hooks[0].command",
        "absolute paths are not allowed",
    );
    let (_t, dir) = copy_of("aftersales");
    edit(&dir, "templates/pipeline.toml", |s| {
        s.replace("template = \"role.j2\"", "template = \"/etc/passwd\"")
    });
    expect_problem(
        &dir,
        "templates/pipeline.toml",
        "block[0].template",
        "absolute paths are not allowed",
    );
}

#[cfg(unix)]
#[test]
fn symlinks_out_of_the_directory_are_refused() {
    let (tmp, dir) = copy_of("aftersales");
    let outside = tmp.path().join("outside.j2");
    fs::write(&outside, "stolen").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("templates/evil.j2")).unwrap();
    // A symlink that stays inside is fine and is read through.
    std::os::unix::fs::symlink("role.j2", dir.join("templates/alias.j2")).unwrap();
    let problems = expect_problem(
        &dir,
        "templates/evil.j2",
        "path",
        "outside the harness directory",
    );
    assert_eq!(problems.len(), 1, "{}", show(&problems));
    assert!(
        Harness::load(&dir).is_err(),
        "load refuses a harness with a symlink out"
    );
    fs::remove_file(dir.join("templates/evil.j2")).unwrap();
    let h = Harness::load(&dir).unwrap();
    assert_eq!(
        h.files()["templates/alias.j2"],
        h.files()["templates/role.j2"]
    );
}

#[test]
fn template_that_does_not_compile() {
    let (_t, dir) = copy_of("aftersales");
    edit(&dir, "templates/order.j2", |s| {
        s.replace("{% endif %}\n", "{% endfor %}\n")
    });
    let problems = check_dir(&dir);
    let p = problems
        .iter()
        .find(|p| p.file == "templates/order.j2")
        .unwrap_or_else(|| panic!("{}", show(&problems)));
    assert!(p.message.contains("does not compile"), "{p}");
    assert!(p.line.is_some(), "{p}");

    let (_t, dir) = copy_of("aftersales");
    edit(&dir, "templates/pipeline.toml", |s| {
        s.replace(
            "at most {{ limits.max_reply_chars }}",
            "at most {{ limits.max_reply_chars",
        )
    });
    expect_problem(
        &dir,
        "templates/pipeline.toml",
        "block[1].items[0]",
        "does not compile",
    );
}

#[test]
fn limits_out_of_range() {
    let (_t, dir) = copy_of("aftersales");
    edit(&dir, "harness.toml", |s| {
        s.replace("max_reply_chars = 300", "max_reply_chars = 5")
            .replace("max_rounds = 8", "max_rounds = 0")
    });
    let problems = expect_problem(
        &dir,
        "harness.toml",
        "limits.max_reply_chars",
        "5 is out of range 10..=8000",
    );
    assert!(
        problems
            .iter()
            .any(|p| p.field.as_deref() == Some("limits.max_rounds")),
        "{}",
        show(&problems)
    );
    // A negative value is a type error, reported with its line.
    let (_t, dir) = copy_of("aftersales");
    edit(&dir, "harness.toml", |s| {
        s.replace("max_tool_calls = 6", "max_tool_calls = -1")
    });
    let problems = expect_problem(&dir, "harness.toml", "limits.max_tool_calls", "");
    assert!(problems[0].line.is_some(), "{}", show(&problems));
}

#[test]
fn tool_mode_needs_the_load_tool() {
    let (_t, dir) = copy_of("taolive");
    fs::remove_file(dir.join("tools/load_skill.json")).unwrap();
    expect_problem(
        &dir,
        "harness.toml",
        "skills.load_tool",
        "no tool named \"load_skill\"",
    );
}

#[test]
fn parse_errors_name_file_and_line() {
    let cases: [(&str, &str, Box<dyn Fn(String) -> String>, usize); 4] = [
        (
            "harness.toml",
            "harness.toml",
            Box::new(|s: String| s.replace("max_rounds = 8", "max_rounds = = 8")),
            32,
        ),
        (
            "tools/lookup_order.json",
            "tools/lookup_order.json",
            Box::new(|s: String| s.replacen("\"name\"", "name", 1)),
            2,
        ),
        (
            "playbooks/delivery-delay/SKILL.md",
            "playbooks/delivery-delay/SKILL.md",
            Box::new(|s: String| s.replace("name: delivery-delay", "name: [delivery-delay")),
            2,
        ),
        (
            "templates/pipeline.toml",
            "templates/pipeline.toml",
            Box::new(|s: String| {
                s.replace("[[block]]\nname = \"order\"", "[[block]\nname = \"order\"")
            }),
            17,
        ),
    ];
    for (rel, file, f, line) in cases {
        let (_t, dir) = copy_of("aftersales");
        edit(&dir, rel, f);
        let problems = check_dir(&dir);
        let p = problems
            .iter()
            .find(|p| p.file == file)
            .unwrap_or_else(|| panic!("{rel}:\n{}", show(&problems)));
        assert_eq!(p.line, Some(line), "{p}");
        assert!(
            Harness::load(&dir).is_err(),
            "{rel}: load must fail on a parse error"
        );
    }
    // Unknown keys are named.
    let (_t, dir) = copy_of("aftersales");
    edit(&dir, "tools/lookup_order.json", |s| {
        s.replace("\"inputSchema\"", "\"input_schema\"")
    });
    expect_problem(
        &dir,
        "tools/lookup_order.json",
        "input_schema",
        "unknown field",
    );
    let (_t, dir) = copy_of("aftersales");
    edit(&dir, "playbooks/delivery-delay/SKILL.md", |s| {
        s.replacen("---\n", "---\nauthor: me\n", 1)
    });
    expect_problem(
        &dir,
        "playbooks/delivery-delay/SKILL.md",
        "front matter field 'author'",
        "unknown field",
    );
}

#[test]
fn all_problems_are_collected() {
    let (_t, dir) = copy_of("aftersales");
    edit(&dir, "harness.toml", |s| {
        s.replace("max_reply_chars = 300", "max_reply_chars = 1")
    });
    edit(&dir, "playbooks/refund-request/SKILL.md", |s| {
        s.replace("name: refund-request", "name: refunds")
    });
    edit(&dir, "tools/lookup_order.json", |s| {
        s.replace("\"name\": \"lookup_order\"", "\"name\": \"lookup.order\"")
    });
    let problems = check_dir(&dir);
    let files: std::collections::BTreeSet<&str> =
        problems.iter().map(|p| p.file.as_str()).collect();
    for f in [
        "harness.toml",
        "playbooks/refund-request/SKILL.md",
        "tools/lookup_order.json",
    ] {
        assert!(files.contains(f), "{f} missing:\n{}", show(&problems));
    }
}

#[test]
fn renaming_a_tool_exposes_stale_hook_references() {
    let h = Harness::load(sample("taolive")).unwrap();
    let variant = h
        .edited(|files| {
            let mut tool = h.tool("create_purchase_link").unwrap().clone();
            tool.name = "make_order_link".into();
            files.remove("tools/create_purchase_link.json");
            files.insert(
                "tools/make_order_link.json".into(),
                HarnessFile::text(tool.to_json_text()),
            );
        })
        .unwrap();
    assert!(variant.tool("make_order_link").is_some());
    let problems = variant.validate();
    let fields: Vec<&str> = problems.iter().filter_map(|p| p.field.as_deref()).collect();
    assert!(
        fields.contains(&"hooks.PreToolUse[0].matcher"),
        "{}",
        show(&problems)
    );
    assert!(
        fields.contains(&"hooks.Stop[0].hooks[2].params.sources[3]"),
        "{}",
        show(&problems)
    );
}

// ---------------------------------------------------------------------------------------------
// Hash, render, round trip

fn write_files(dir: &Path, files: &[(&str, &str)]) {
    for (rel, text) in files {
        let path = dir.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
}

#[test]
fn hash_ignores_creation_order_and_line_endings_but_not_content() {
    let h = Harness::load(sample("aftersales")).unwrap();
    let files: Vec<(&str, String)> = h
        .files()
        .iter()
        .map(|(k, f)| (k.as_str(), String::from_utf8(f.bytes.clone()).unwrap()))
        .collect();
    let forward: Vec<(&str, &str)> = files.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let backward: Vec<(&str, &str)> = forward.iter().rev().cloned().collect();
    let crlf: Vec<(&str, String)> = files
        .iter()
        .map(|(k, v)| (*k, v.replace('\n', "\r\n")))
        .collect();
    let crlf: Vec<(&str, &str)> = crlf.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let tmp = tempfile::tempdir().unwrap();
    let mut hashes = Vec::new();
    for (i, set) in [&forward, &backward, &crlf].into_iter().enumerate() {
        let dir = tmp.path().join(format!("h{i}"));
        write_files(&dir, set);
        // Dot-files are not part of the harness.
        fs::write(dir.join(".DS_Store"), [0u8, 1, 2]).unwrap();
        hashes.push(hat::harness::hash::content_hash(
            &hat::harness::files::read_dir(&dir).0,
        ));
    }
    assert_eq!(hashes[0], h.hash());
    assert_eq!(hashes[1], h.hash());
    assert_eq!(hashes[2], h.hash());
    assert!(h.hash().starts_with("sha256:") && h.hash().len() == 7 + 64);
    let changed = h
        .edited(|files| {
            let f = files.get_mut("templates/role.j2").unwrap();
            f.bytes.extend_from_slice(b"Be kind.\n");
        })
        .unwrap();
    assert_ne!(changed.hash(), h.hash());
}

fn taolive_context() -> LiveContext {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/harness/taolive-context.json");
    LiveContext::from_json_text("taolive-context.json", &fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn render_follows_pipeline_order_and_limits() {
    let h = Harness::load(sample("taolive")).unwrap();
    let ctx = taolive_context();
    let blocks = h.render_blocks(&ctx).unwrap();
    let names: Vec<&str> = blocks.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "persona",
            "current_product",
            "room_state",
            "active_rules",
            "constraints",
            "skills_catalog"
        ]
    );
    let prompt = h.render_system_prompt(&ctx).unwrap();
    let pos = |needle: &str| {
        prompt
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not in prompt:\n{prompt}"))
    };
    assert!(pos("# 角色 Role") < pos("加绒连帽卫衣") && pos("加绒连帽卫衣") < pos("冬季保暖专场"));
    assert!(
        pos("1. 今晚 21:00") < pos("2. 观众问到雪地靴"),
        "rules in context order"
    );
    assert!(
        prompt.contains("类目 apparel。\n规格 Specs:"),
        "include keeps its line end:\n{prompt}"
    );
    assert!(prompt.contains("不超过 120 个字") && prompt.contains("within 15 seconds"));
    // Tool mode: catalog only, bodies come from load_skill.
    assert!(prompt.contains("`load_skill`") && !prompt.contains("## 步骤 Steps"));
    // Without a product the product block is skipped.
    let default = h.render_blocks(&LiveContext::default_context()).unwrap();
    assert!(default
        .iter()
        .all(|b| b.name != "current_product" && b.name != "active_rules"));

    // Block order, item order and limits are data: a variant that moves the catalog first,
    // reverses the constraint items and tightens the reply limit renders accordingly.
    let variant = h
        .edited(|files| {
            let mut pipeline = h.pipeline().clone();
            let catalog = pipeline.blocks.pop().unwrap();
            pipeline.blocks.insert(0, catalog);
            pipeline
                .blocks
                .iter_mut()
                .find(|b| b.name == "constraints")
                .unwrap()
                .items
                .reverse();
            files.insert(
                "prompts/pipeline.toml".into(),
                HarnessFile::text(pipeline.to_toml_text()),
            );
            let toml = String::from_utf8(files["harness.toml"].bytes.clone()).unwrap();
            files.insert(
                "harness.toml".into(),
                HarnessFile::text(toml.replace("max_reply_chars = 120", "max_reply_chars = 60")),
            );
        })
        .unwrap();
    assert!(
        variant.validate().is_empty(),
        "{}",
        show(&variant.validate())
    );
    let names: Vec<String> = variant
        .render_blocks(&ctx)
        .unwrap()
        .into_iter()
        .map(|b| b.name)
        .collect();
    assert_eq!(names[0], "skills_catalog");
    let prompt = variant.render_system_prompt(&ctx).unwrap();
    assert!(prompt.contains("不超过 60 个字") && !prompt.contains("120"));
    assert!(prompt.find("听不清").unwrap() < prompt.find("每条回复不超过").unwrap());
}

#[test]
fn context_placement_keeps_the_system_prompt_the_same_for_every_room() {
    let h = Harness::load(sample("taolive")).unwrap();
    let placed = placed_in_context(&h, &["current_product", "room_state", "active_rules"]);
    assert!(placed.validate().is_empty(), "{}", show(&placed.validate()));
    let ctx = taolive_context();
    assert_eq!(h.render_prompt(&ctx).unwrap().context, None);
    let prompt = placed.render_prompt(&ctx).unwrap();
    let context = prompt.context.clone().expect("a context message");
    // Each block lands in exactly one of the two, the context-filled ones in pipeline order.
    for b in h.render_blocks(&ctx).unwrap() {
        let (in_system, in_context) = (prompt.system.contains(&b.text), context.contains(&b.text));
        let wanted = ["current_product", "room_state", "active_rules"].contains(&b.name.as_str());
        assert_eq!(
            (in_system, in_context),
            (!wanted, wanted),
            "block {}",
            b.name
        );
    }
    assert!(context.find("加绒连帽卫衣").unwrap() < context.find("冬季保暖专场").unwrap());
    // What a prefix cache needs: the same system prompt whatever the room.
    let empty_room = placed
        .render_prompt(&LiveContext::default_context())
        .unwrap();
    assert_eq!(empty_room.system, prompt.system);
    assert_ne!(empty_room.context, prompt.context);
    let roles: Vec<Role> = prompt.messages().into_iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::System, Role::User]);
}

#[test]
fn an_unknown_placement_is_a_problem_with_its_line() {
    let (_tmp, dir) = copy_of("taolive");
    edit(&dir, "prompts/pipeline.toml", |s| {
        s.replace(
            "template = \"room_state.md.j2\"",
            "template = \"room_state.md.j2\"\nplacement = \"user\"",
        )
    });
    let problems = check_dir(&dir);
    let p = problems
        .iter()
        .find(|p| p.file == "prompts/pipeline.toml")
        .unwrap_or_else(|| panic!("no pipeline problem:\n{}", show(&problems)));
    assert!(
        p.message.contains("user") && p.message.contains("context") && p.line.is_some(),
        "{p}"
    );
}

#[test]
fn inline_skills_are_rendered_into_the_prompt() {
    let h = Harness::load(sample("aftersales")).unwrap();
    assert_eq!(h.skills_mode(), SkillsMode::Inline);
    let prompt = h
        .render_system_prompt(&LiveContext::default_context())
        .unwrap();
    assert!(
        prompt.contains("## refund-request")
            && prompt.contains("escalate_to_human` with a summary")
    );
    assert!(prompt.contains("\n\n---\n\n"), "custom separator");
    assert_eq!(h.tools()[0].name, "lookup_order", "[tools] order");
    let specs = h.openai_tools();
    assert_eq!(specs.len(), 5);
    assert_eq!(specs[0]["type"], "function");
    assert_eq!(
        specs[0]["function"]["parameters"]["required"],
        serde_json::json!(["order_id"])
    );
}

#[test]
fn load_write_round_trip_is_byte_identical() {
    for name in ["taolive", "aftersales"] {
        let h = Harness::load(sample(name)).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        h.write_to(&out).unwrap();
        let (orig, _) = hat::harness::files::read_dir(&sample(name));
        let (copy, problems) = hat::harness::files::read_dir(&out);
        assert!(problems.is_empty());
        assert_eq!(orig, copy, "{name}: files, bytes and executable bits");
        assert_eq!(Harness::load(&out).unwrap().hash(), h.hash());
        assert!(h.write_to(&out).is_err(), "refuses a non-empty target");
    }
}

// ---------------------------------------------------------------------------------------------
// The binary

fn hat(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hat"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn hat_harness_cli() {
    let taolive = sample("taolive");
    let taolive = taolive.to_str().unwrap();
    let ok = hat(&["harness", "validate", taolive]);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(
        String::from_utf8_lossy(&ok.stdout).starts_with("ok: taolive 1.0.0 (12 tools, 13 skills")
    );

    let (_t, dir) = copy_of("aftersales");
    edit(&dir, "hooks/hooks.json", |s| {
        s.replace("\"Stop\"", "\"Halt\"")
    });
    edit(&dir, "harness.toml", |s| {
        s.replace("max_rounds = 8", "max_rounds = 1000")
    });
    let bad = hat(&["harness", "validate", dir.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("hooks/hooks.json: field 'hooks.Halt': unknown hook event"),
        "{stderr}"
    );
    assert!(
        stderr.contains("harness.toml: field 'limits.max_rounds': 1000 is out of range"),
        "{stderr}"
    );

    let missing = hat(&["harness", "validate", "/nonexistent/harness"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(!String::from_utf8_lossy(&missing.stderr).contains("panicked"));

    let ctx = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/harness/taolive-context.json");
    let render = hat(&[
        "harness",
        "render",
        taolive,
        "--context",
        ctx.to_str().unwrap(),
    ]);
    assert_eq!(render.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&render.stdout).contains("加绒连帽卫衣"));

    let tools = hat(&["harness", "tools", taolive]);
    let specs: Vec<serde_json::Value> = serde_json::from_slice(&tools.stdout).unwrap();
    assert_eq!(specs.len(), 12);
    assert!(specs
        .iter()
        .all(|s| s["type"] == "function" && s["function"]["parameters"]["type"] == "object"));

    let hash = hat(&["harness", "hash", taolive]);
    assert_eq!(
        String::from_utf8_lossy(&hash.stdout).trim(),
        Harness::load(sample("taolive")).unwrap().hash()
    );

    let unloadable = hat(&["harness", "hash", dir.to_str().unwrap()]);
    assert_eq!(unloadable.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unloadable.stderr).contains("hooks.Halt"));
}

// ---------------------------------------------------------------------------------------------
// [serves]: what a harness declares it serves

/// Each way a declaration can go wrong names harness.toml, the line and the entry, and says what to do.
#[test]
fn serves_declaration_problems_name_the_entry_and_the_fix() {
    let (_t, dir) = copy_of("aftersales");
    edit(&dir, "harness.toml", |s| {
        s.replace(
            "get_after_sales_policy = \"get_return_policy\"",
            "get_after_sales_policy = \"lookup_order\"\nget_order_stat = \"request_refund\"\nsearch_faq = \"kb_search\"",
        )
    });
    let problems = expect_problem(
        &dir,
        "harness.toml",
        "serves.tools.get_order_status",
        "\"get_after_sales_policy\" and \"get_order_status\" both map to \"lookup_order\"",
    );
    expect_problem(
        &dir,
        "harness.toml",
        "serves.tools.get_order_stat",
        "not a canonical tool id",
    );
    expect_problem(
        &dir,
        "harness.toml",
        "serves.tools.search_faq",
        "no tool of that name (its tools: lookup_order, get_return_policy",
    );
    expect_problem(
        &dir,
        "harness.toml",
        "serves.lacks",
        "both mapped and lacked",
    );
    let line = problems
        .iter()
        .find(|p| p.field.as_deref() == Some("serves.tools.search_faq"))
        .and_then(|p| p.line)
        .unwrap();
    let text = fs::read_to_string(dir.join("harness.toml")).unwrap();
    assert!(text
        .lines()
        .nth(line - 1)
        .unwrap()
        .starts_with("search_faq ="));

    // A canonical tool neither served nor lacked: `hat harness validate` asks for one or the other.
    let (_t, dir) = copy_of("aftersales");
    edit(&dir, "harness.toml", |s| s.replace("\"search_faq\"", ""));
    expect_problem(
        &dir,
        "harness.toml",
        "serves.tools",
        "canonical tool \"search_faq\" is not served",
    );
    // Weights and intents go through the same checks.
    let (_t, dir) = copy_of("aftersales");
    edit(&dir, "harness.toml", |s| {
        s.replace("chat = 0.1", "chats = 0.1")
    });
    expect_problem(&dir, "harness.toml", "serves", "unknown variant `chats`");
}

/// `hat harness init` writes a skeleton that validates, declares what it serves, and refuses to write
/// over anything.
#[test]
fn harness_init_writes_a_skeleton_that_validates() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("My Shop");
    let out = hat(&["harness", "init", dir.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(check_dir(&dir).is_empty(), "{}", show(&check_dir(&dir)));
    let h = Harness::load(&dir).unwrap();
    assert_eq!(h.name(), "my-shop");
    assert_eq!(h.names().tool_surface("get_order_status"), "lookup_order");
    let again = hat(&["harness", "init", dir.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("is not empty"));
}
