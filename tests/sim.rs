//! End-to-end tests of the live-room simulator, the agent runtime and its hooks, and the oracle teacher.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Result;
use hat::agent::rollout::{run_batch, Summary};
use hat::agent::{Agent, SimEnv};
use hat::harness::Harness;
use hat::policy::oracle::Oracle;
use hat::policy::{Conversation, Policy};
use hat::record::{FunctionCall, Message, Names, Role, ToolCall, Trajectory};
use hat::sim::catalog::{Catalog, Split};
use hat::sim::faults::FaultPlan;
use hat::sim::served::Served;
use hat::sim::tasks::{self, TaskConfig};
use serde_json::{json, Value};

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("harness-samples")
        .join(name)
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let to = dst.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
}

/// A copy of a sample harness, edited by `edit`, loaded from its temporary directory.
fn edited_harness(name: &str, edit: impl FnOnce(&Path)) -> (tempfile::TempDir, Harness) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(name);
    copy_dir(&sample(name), &root);
    edit(&root);
    let h = Harness::load(&root).unwrap();
    (dir, h)
}

fn write_script(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

fn dev_tasks(catalog: &Catalog, n: usize, mix: Option<&str>) -> Vec<Trajectory> {
    let mut cfg = TaskConfig::new(Split::Dev, 11);
    if let Some(m) = mix {
        cfg.mix = m.parse().unwrap();
    }
    tasks::generate(catalog, &cfg, n).unwrap()
}

fn rollout(
    h: &Harness,
    names: Names,
    tasks: &[Trajectory],
    faults: &str,
) -> (Summary, Vec<Trajectory>) {
    let catalog = Catalog::generate(7, 40);
    let agent = Agent::new(h, names.clone()).unwrap();
    let oracle = Oracle::new(h, names);
    let plan: FaultPlan = faults.parse().unwrap();
    let env = SimEnv {
        catalog: &catalog,
        faults: &plan,
        seed: 3,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let mut summary = Summary::default();
    let out: Vec<Trajectory> = run_batch(&agent, &oracle, tasks, &env, &pool)
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    for t in &out {
        summary.add(t);
    }
    (summary, out)
}

fn failures(out: &[Trajectory]) -> Vec<String> {
    out.iter()
        .filter(|t| t.meta["success"] != json!(true))
        .take(5)
        .map(|t| {
            format!(
                "{}: {} | {}",
                t.id,
                t.meta["failures"],
                serde_json::to_string(&t.messages[1..]).unwrap()
            )
        })
        .collect()
}

#[test]
fn oracle_solves_dev_tasks_with_and_without_faults() {
    let h = Harness::load(sample("taolive")).unwrap();
    let catalog = Catalog::generate(7, 40);
    let tasks = dev_tasks(&catalog, 600, None);
    let (clean, out) = rollout(&h, Names::default(), &tasks, "");
    assert!(
        clean.success_rate() >= 0.98,
        "{}\n{:#?}",
        clean.report(),
        failures(&out)
    );
    let (faulty, out) = rollout(
        &h,
        Names::default(),
        &tasks,
        "timeout=0.1,malformed=0.05,permission_denied=0.03,empty=0.05",
    );
    assert!(faulty.faults > 50, "{}", faulty.report());
    assert!(
        faulty.success_rate() >= 0.98,
        "{}\n{:#?}",
        faulty.report(),
        failures(&out)
    );
    // Every fault is recorded with its tool, kind and round.
    let f = out
        .iter()
        .find_map(|t| {
            t.meta["faults"]
                .as_array()
                .filter(|a| !a.is_empty())
                .cloned()
        })
        .unwrap();
    assert!(f[0]["tool"].is_string() && f[0]["kind"].is_string() && f[0]["round"].is_u64());
    // Same seed, same rollout.
    let (_, again) = rollout(
        &h,
        Names::default(),
        &tasks,
        "timeout=0.1,malformed=0.05,permission_denied=0.03,empty=0.05",
    );
    assert_eq!(
        out.iter().map(|t| &t.messages).collect::<Vec<_>>(),
        again.iter().map(|t| &t.messages).collect::<Vec<_>>()
    );
}

/// A harness that puts the live room in the context message: the episode opens with the system
/// prompt and that message, the scored turn starts at the viewer, and the oracle still solves.
#[test]
fn the_live_room_can_sit_in_a_context_message_after_the_system_prompt() {
    let (_dir, h) = edited_harness("taolive", |root| {
        let path = root.join("prompts/pipeline.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let placed = text.replace(
            "template = \"room_state.md.j2\"",
            "template = \"room_state.md.j2\"\nplacement = \"context\"",
        );
        assert_ne!(placed, text);
        std::fs::write(&path, placed).unwrap();
    });
    let catalog = Catalog::generate(7, 40);
    let tasks = dev_tasks(&catalog, 100, None);
    let (summary, out) = rollout(&h, Names::default(), &tasks, "");
    assert!(
        summary.success_rate() >= 0.98,
        "{}\n{:#?}",
        summary.report(),
        failures(&out)
    );
    for (t, task) in out.iter().zip(&tasks) {
        assert_eq!(t.messages[0].role, Role::System);
        assert!(!t.messages[0].text_content().contains("# 直播间状态"));
        assert_eq!(t.messages[1].role, Role::User);
        assert!(t.messages[1]
            .text_content()
            .starts_with("# 直播间状态 Room state"));
        assert_eq!(t.messages[2..2 + task.messages.len()], task.messages[..]);
        assert_eq!(
            t.meta["turn_start"],
            json!(2 + task.messages.len()),
            "{}",
            t.id
        );
        assert_eq!(t.meta["context_message"], json!(true));
    }
}

#[test]
fn oracle_follows_a_renamed_tool_and_skill() {
    let (_dir, h) = edited_harness("taolive", |root| {
        let old = root.join("tools/check_inventory.json");
        let text = std::fs::read_to_string(&old)
            .unwrap()
            .replace("\"check_inventory\"", "\"stock_lookup\"");
        std::fs::remove_file(&old).unwrap();
        std::fs::write(root.join("tools/stock_lookup.json"), text).unwrap();
        let hooks = root.join("hooks/hooks.json");
        let text = std::fs::read_to_string(&hooks)
            .unwrap()
            .replace("\"check_inventory\"", "\"stock_lookup\"");
        std::fs::write(hooks, text).unwrap();
        let skill = root.join("skills/stock-alert/SKILL.md");
        let text = std::fs::read_to_string(&skill)
            .unwrap()
            .replace("name: stock-alert", "name: inventory-watch");
        std::fs::remove_dir_all(root.join("skills/stock-alert")).unwrap();
        std::fs::create_dir_all(root.join("skills/inventory-watch")).unwrap();
        std::fs::write(root.join("skills/inventory-watch/SKILL.md"), text).unwrap();
    });
    let names: Names = serde_json::from_value(json!({"tools": {"check_inventory": "stock_lookup"},
                                                     "skills": {"stock-alert": "inventory-watch"}}))
    .unwrap();
    let catalog = Catalog::generate(7, 40);
    let tasks = dev_tasks(&catalog, 200, Some("product_qa=1"));
    let (s, out) = rollout(&h, names, &tasks, "");
    assert!(
        s.success_rate() >= 0.98,
        "{}\n{:#?}",
        s.report(),
        failures(&out)
    );
    assert!(out
        .iter()
        .flat_map(|t| &t.messages)
        .flat_map(|m| &m.tool_calls)
        .any(|c| c.function.name == "stock_lookup"));
}

#[test]
fn oracle_solves_after_sales_tasks_under_the_second_harness() {
    let h = Harness::load(sample("aftersales")).unwrap();
    let names = h.names();
    let catalog = Catalog::generate(7, 40);
    let tasks = dev_tasks(&catalog, 200, Some("after_sales=1"));
    let (s, out) = rollout(&h, names.clone(), &tasks, "");
    assert!(
        s.success_rate() >= 0.98,
        "{}\n{:#?}",
        s.report(),
        failures(&out)
    );
    let (s, out) = rollout(
        &h,
        names,
        &tasks,
        "timeout=0.1,malformed=0.05,permission_denied=0.03,empty=0.05",
    );
    assert!(
        s.success_rate() >= 0.98,
        "{}\n{:#?}",
        s.report(),
        failures(&out)
    );
}

/// Tasks for a harness need only what it serves, in its declared mix: no task asks for a canonical tool
/// or skill it lacks, the intents are the declared ones, and a harness that serves every canonical id
/// (taolive, no `[serves]` table) gets exactly the tasks it always got.
#[test]
fn tasks_for_a_harness_need_only_what_it_serves() {
    let catalog = Catalog::generate(7, 40);
    let plain = tasks::generate(&catalog, &TaskConfig::new(Split::Dev, 11), 200).unwrap();
    let mut cfg = TaskConfig::new(Split::Dev, 11);
    Served::of(&Harness::load(sample("taolive")).unwrap()).apply(&mut cfg);
    assert!(cfg.unserved.is_empty());
    assert_eq!(tasks::generate(&catalog, &cfg, 200).unwrap(), plain);

    let h = Harness::load(sample("aftersales")).unwrap();
    let served = Served::of(&h);
    assert!(served.unserved.contains("check_inventory"));
    assert!(!served.unserved.contains("get_order_status"));
    let mut cfg = TaskConfig::new(Split::Dev, 11);
    served.apply(&mut cfg);
    let out = tasks::generate(&catalog, &cfg, 400).unwrap();
    let mut by_intent: std::collections::BTreeMap<String, usize> = Default::default();
    for t in &out {
        let task = t.task.as_ref().unwrap();
        *by_intent.entry(task.intent.to_string()).or_default() += 1;
        for c in &task.expected.as_ref().unwrap().tool_calls {
            assert!(
                !served.unserved.contains(&c.tool),
                "{}: needs {}",
                t.id,
                c.tool
            );
        }
    }
    // Declared: after_sales 0.9, chat 0.1.
    assert_eq!(
        by_intent.keys().collect::<Vec<_>>(),
        ["after_sales", "chat"]
    );
    let share = by_intent["after_sales"] as f64 / out.len() as f64;
    assert!((0.85..=0.95).contains(&share), "{by_intent:?}");

    // An intent whose every ask needs a lacked tool is an error naming both, not a silent skip.
    cfg.mix = "presentation_order=1".parse().unwrap();
    let err = tasks::generate(&catalog, &cfg, 5).unwrap_err().to_string();
    assert!(
        err.contains("presentation_order") && err.contains("update_presentation_order"),
        "{err}"
    );
}

/// Every sample, the one written from docs/own-harness.md included, goes through validate → tasks for
/// it → the oracle under its declared names at 98% or better (with faults on).
#[test]
fn every_sample_serves_its_own_tasks() {
    let catalog = Catalog::generate(7, 40);
    for name in ["taolive", "aftersales", "shopdesk"] {
        assert!(
            hat::harness::check_dir(sample(name)).is_empty(),
            "{name}: {:?}",
            hat::harness::check_dir(sample(name))
        );
        let h = Harness::load(sample(name)).unwrap();
        let mut cfg = TaskConfig::new(Split::Dev, 5);
        Served::of(&h).apply(&mut cfg);
        let tasks = tasks::generate(&catalog, &cfg, 100).unwrap();
        for faults in [
            "",
            "timeout=0.1,malformed=0.05,permission_denied=0.03,empty=0.05",
        ] {
            let (s, out) = rollout(&h, h.names(), &tasks, faults);
            assert!(
                s.success_rate() >= 0.98,
                "{name} [{faults}]: {}\n{:#?}",
                s.report(),
                failures(&out)
            );
        }
    }
}

/// A policy that plays back fixed messages, then replies "好的".
struct Scripted(Mutex<Vec<Message>>);

impl Scripted {
    fn new(mut msgs: Vec<Message>) -> Scripted {
        msgs.reverse();
        Scripted(Mutex::new(msgs))
    }
}

impl Policy for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
    fn respond(&self, _: &Conversation<'_>) -> Result<Message> {
        Ok(self
            .0
            .lock()
            .unwrap()
            .pop()
            .unwrap_or_else(|| Message::text(Role::Assistant, "好的")))
    }
}

fn calls(list: &[(&str, &str)]) -> Message {
    let mut m = Message::text(Role::Assistant, "");
    m.content = None;
    m.tool_calls = list
        .iter()
        .enumerate()
        .map(|(i, (name, args))| ToolCall {
            id: format!("c{i}"),
            kind: "function".into(),
            function: FunctionCall {
                name: name.to_string(),
                arguments: args.to_string(),
                extra: Default::default(),
            },
            extra: Default::default(),
        })
        .collect();
    m
}

fn reply(text: &str) -> Message {
    Message::text(Role::Assistant, text)
}

/// Run one scripted episode on a chat task of the dev split.
fn episode(h: &Harness, script: Vec<Message>) -> Trajectory {
    let catalog = Catalog::generate(7, 40);
    let task = dev_tasks(&catalog, 1, Some("chat=1")).remove(0);
    let agent = Agent::new(h, Names::default()).unwrap();
    let plan = FaultPlan::default();
    agent
        .run(
            &Scripted::new(script),
            &task,
            &SimEnv {
                catalog: &catalog,
                faults: &plan,
                seed: 1,
            },
        )
        .unwrap()
}

fn tool_results(t: &Trajectory) -> Vec<String> {
    t.messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text_content())
        .collect()
}

#[test]
fn malformed_tool_calls_become_tool_errors() {
    let h = Harness::load(sample("taolive")).unwrap();
    let t = episode(
        &h,
        vec![
            calls(&[
                ("get_product_detail", "{bad json"),
                ("no_such_tool", "{}"),
                ("get_product_detail", r#"{"product_id": 5}"#),
            ]),
            calls(&[("get_product_detail", "[1, 2]")]),
            reply("好的宝宝"),
        ],
    );
    let results = tool_results(&t);
    // tool_call_json retries once with its feedback template, then blocks.
    assert!(results[0].contains("参数无效"), "{}", results[0]);
    assert!(results[1].contains("unknown_tool"), "{}", results[1]);
    assert!(
        results[2].contains("denied") && results[2].contains("must be string"),
        "{}",
        results[2]
    );
    assert!(results[3].contains("denied"), "{}", results[3]);
    assert_eq!(t.meta["malformed_calls"], 4);
    assert_eq!(t.meta["stop_reason"], "reply");
    assert_eq!(t.meta["hooks"]["retry"], 1);
}

#[test]
fn text_form_tool_calls_are_parsed_or_fed_back() {
    let h = Harness::load(sample("taolive")).unwrap();
    let t = episode(
        &h,
        vec![
            reply("<tool_call>\n{\"name\": \"get_room_state\", \"arguments\": {}}\n</tool_call>"),
            reply(
                "<tool_call>\n{\"name\": \"get_room_state\", \"arguments\": {oops}\n</tool_call>",
            ),
            reply("好的"),
        ],
    );
    assert_eq!(t.messages.iter().flat_map(|m| &m.tool_calls).count(), 1);
    assert!(tool_results(&t)[0].contains("queue"));
    let fb = &t.messages[t.messages.len() - 2];
    assert!(
        fb.role == Role::User && fb.text_content().starts_with("[tool-call error]"),
        "{:?}",
        fb
    );
    assert_eq!(t.meta["malformed_calls"], 1);
    assert_eq!(t.meta["stop_reason"], "reply");
}

/// A stale tool name gets one answer whether the policy wrote the call as text (a local model) or
/// structured (a teacher): the runtime's `unknown_tool` result listing the harness's tools — so the
/// recovery a teacher's trajectory teaches is what a trained model meets at inference.
#[test]
fn a_call_to_a_missing_tool_gets_the_same_answer_as_text_or_structured() {
    let h = Harness::load(sample("taolive")).unwrap();
    let as_text = episode(
        &h,
        vec![
            reply("<tool_call>\n{\"name\": \"get_room_status\", \"arguments\": {}}\n</tool_call>"),
            reply("好的"),
        ],
    );
    let structured = episode(&h, vec![calls(&[("get_room_status", "{}")]), reply("好的")]);
    let text_results = tool_results(&as_text);
    assert_eq!(text_results, tool_results(&structured));
    assert!(
        text_results[0].contains("unknown_tool") && text_results[0].contains("get_room_state"),
        "{}",
        text_results[0]
    );
    assert_eq!(as_text.meta["malformed_calls"], 1);
}

#[test]
fn stop_hooks_retry_with_feedback_then_accept_or_block() {
    let h = Harness::load(sample("taolive")).unwrap();
    let long = "好".repeat(130);
    let t = episode(&h, vec![reply(&long), reply("短一点的回复")]);
    assert_eq!(t.meta["retries"], 1);
    let fb = &t.messages[t.messages.len() - 2];
    assert_eq!(fb.role, Role::User);
    assert!(fb.text_content().contains("120"), "{}", fb.text_content());
    assert_eq!(t.messages.last().unwrap().text_content(), "短一点的回复");

    // Still too long after max_retries (2): the reply is refused, not spoken.
    let t = episode(&h, vec![reply(&long), reply(&long), reply(&long)]);
    assert_eq!(t.meta["stop_reason"], "blocked");
    assert_eq!(t.meta["hooks"]["block"], 1);
    assert_eq!(t.messages.last().unwrap().text_content(), "");
    assert!(t.meta["blocked_reply"]
        .as_str()
        .unwrap()
        .starts_with("好好"));

    // Banned terms and ungrounded prices are caught the same way.
    let t = episode(&h, vec![reply("全网最低价¥9"), reply("欢迎宝宝")]);
    assert_eq!(t.meta["hooks"]["retry"], 1);
    let fb = &t.messages[t.messages.len() - 2];
    assert!(fb.text_content().contains("最"), "{}", fb.text_content());
    let t = episode(&h, vec![reply("到手价¥9"), reply("欢迎宝宝")]);
    assert_eq!(t.messages[t.messages.len() - 2].role, Role::System);
}

#[test]
fn fix_hooks_modify_replies_and_prompts() {
    let (_dir, h) = edited_harness("aftersales", |_| {});
    let catalog = Catalog::generate(7, 40);
    let mut task = dev_tasks(&catalog, 1, Some("after_sales=1")).remove(0);
    task.messages.last_mut().unwrap().content =
        Some(hat::record::Content::Text("my card number is 1234".into()));
    let agent = Agent::new(&h, Names::default()).unwrap();
    let plan = FaultPlan::default();
    let long = "a".repeat(350);
    let t = agent
        .run(
            &Scripted::new(vec![reply(&long)]),
            &task,
            &SimEnv {
                catalog: &catalog,
                faults: &plan,
                seed: 1,
            },
        )
        .unwrap();
    let user = t
        .messages
        .iter()
        .rfind(|m| m.role == Role::User)
        .unwrap()
        .text_content();
    assert!(
        user.contains("***********") && !user.contains("card number"),
        "{user}"
    );
    assert_eq!(
        t.messages.last().unwrap().text_content().chars().count(),
        300
    );
    assert_eq!(t.meta["hooks"]["fix"], 2);
}

#[test]
fn command_hooks_block_modify_and_time_out() {
    let (_dir, h) = edited_harness("taolive", |root| {
        write_script(
            &root.join("hooks/pin_product.sh"),
            "#!/bin/sh\ncat >/dev/null\necho '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"updatedInput\":{\"product_id\":\"p004\"}}}'\n",
        );
        write_script(&root.join("hooks/slow.sh"), "#!/bin/sh\nsleep 5\n");
        let hooks = root.join("hooks/hooks.json");
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&hooks).unwrap()).unwrap();
        let pre = v["hooks"]["PreToolUse"].as_array_mut().unwrap();
        pre.push(json!({"matcher": "get_promotions", "hooks": [{"type": "command", "command": "hooks/pin_product.sh", "timeout": 5}]}));
        pre.push(json!({"matcher": "get_shipping_info", "hooks": [{"type": "command", "command": "hooks/slow.sh", "timeout": 1}]}));
        std::fs::write(hooks, v.to_string()).unwrap();
    });
    let start = std::time::Instant::now();
    let t = episode(
        &h,
        vec![
            calls(&[
                (
                    "create_purchase_link",
                    r#"{"product_id": "p004", "quantity": 50}"#,
                ),
                ("get_promotions", r#"{"product_id": "p009"}"#),
                ("get_shipping_info", r#"{"product_id": "p004"}"#),
            ]),
            reply("好的"),
        ],
    );
    assert!(
        start.elapsed().as_secs_f64() < 4.0,
        "the slow hook was not killed"
    );
    let results = tool_results(&t);
    assert!(
        results[0].contains("Purchase limit is 20"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains("\"product_id\":\"p004\""),
        "{}",
        results[1]
    );
    assert!(
        results[2].contains("carrier"),
        "a timed-out hook does not block: {}",
        results[2]
    );
    assert_eq!(t.meta["hooks"]["modify"], 1);
    assert_eq!(t.meta["hooks"]["timeout"], 1);
    assert!(t.meta["hooks"]["block"].as_u64().unwrap() >= 1);
}

#[test]
fn round_and_tool_call_limits_stop_the_loop() {
    let h = Harness::load(sample("taolive")).unwrap();
    let one = || calls(&[("get_room_state", "{}")]);
    let t = episode(&h, (0..10).map(|_| one()).collect());
    assert_eq!(t.meta["stop_reason"], "max_rounds");
    assert_eq!(t.meta["rounds"], 6);
    let many: Vec<(&str, &str)> = (0..10).map(|_| ("get_room_state", "{}")).collect();
    let t = episode(&h, vec![calls(&many), reply("好的")]);
    assert_eq!(t.meta["limit_hits"], 2);
    assert!(tool_results(&t)[9].contains("tool-call limit of 8"));
}
