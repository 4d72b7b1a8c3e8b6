//! Throughput of the verifiable judge, the RL reward path: trajectories per second for scoring alone
//! and for the whole JSONL round trip (parse, score, serialise), on all cores through rayon.
//! Run: `cargo bench --bench judge` (target: >= 10,000 trajectories/s on 2 cores).

use std::time::Instant;

use hat::judge::verifiable::{score, score_all, TokenCounter};
use hat::record::Trajectory;
use rayon::prelude::*;
use serde_json::{json, Value};

fn tool(name: &str, param: &str) -> Value {
    json!({"type": "function", "function": {"name": name, "description": "查询商品的优惠与到手价",
        "parameters": {"type": "object", "properties": {param: {"type": "string"}}, "required": [param]}}})
}

fn call(id: &str, name: &str, args: Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
}

/// A realistic product-QA episode (system prompt, skill load, two tool calls, reply); every other one
/// under a renamed-tool variant, every third with a timeout and a retry.
fn record(i: usize) -> String {
    let renamed = i % 2 == 1;
    let (promo, load, stock) = if renamed {
        ("promo_lookup", "fetch_rules", "stock_lookup")
    } else {
        ("get_promotions", "load_skill", "check_inventory")
    };
    let price = 100 + i % 400;
    let result = json!({"product_id": format!("p{:03}", i % 50), "list_price": price + 20, "coupon": {"threshold": 200, "amount": 20}, "final_price": price, "window": "2026-11-30 20:00-23:59"}).to_string();
    let mut messages = vec![
        json!({"role": "system", "content": format!("你是淘宝直播间的AI主播。每条回复不超过 120 个字，口语化。当前商品 p{:03}，直播间规则：不得使用绝对化用语。{}", i % 50, "技能目录：product-qa, casual-chat, after-sales-care。".repeat(4))}),
        json!({"role": "user", "content": "主播这个现在多少钱？有优惠吗"}),
        json!({"role": "assistant", "content": null, "reasoning_content": "用户问价格和优惠，先加载技能再查优惠信息，注意用到手价回答。",
            "tool_calls": [call("c1", load, json!({"name": "product-qa"})), call("c2", promo, json!({"product_id": format!("p{:03}", i % 50)}))]}),
        json!({"role": "tool", "tool_call_id": "c1", "content": "回答价格时先报到手价，再说优惠规则，最后引导下单。".repeat(3)}),
    ];
    if i % 3 == 0 {
        messages.push(json!({"role": "tool", "tool_call_id": "c2", "content": "{\"error\":{\"code\":\"timeout\",\"message\":\"did not answer within 3000 ms\"}}"}));
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [call("c3", promo, json!({"product_id": format!("p{:03}", i % 50)}))]}));
        messages.push(json!({"role": "tool", "tool_call_id": "c3", "content": result}));
    } else {
        messages.push(json!({"role": "tool", "tool_call_id": "c2", "content": result}));
    }
    messages.push(json!({"role": "assistant", "content": format!("宝宝们，这款到手价¥{price}，满200减20，库存不多了，喜欢的直接拍！")}));
    let mut v = json!({
        "id": format!("bench-{i:06}"),
        "task": {"intent": "product_qa", "expected": {"skill": "product-qa",
            "tool_calls": [{"tool": "get_promotions", "args": {"product_id": format!("p{:03}", i % 50)}}],
            "facts": [price.to_string()], "forbidden": ["最便宜", "第一"]}},
        "harness": {"name": "taolive", "version": "1.0.0", "hash": "sha256:00"},
        "tools": [tool(promo, "product_id"), tool(load, "name"), tool(stock, "product_id")],
        "messages": messages,
        "meta": {"source": "sim", "turn_start": 1},
    });
    if renamed {
        v["harness"]["names"] = json!({"tools": {"get_promotions": "promo_lookup", "load_skill": "fetch_rules", "check_inventory": "stock_lookup"}});
    }
    v.to_string()
}

fn main() {
    let n = 40_000;
    let lines: Vec<String> = (0..n).map(record).collect();
    let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
    let counter = TokenCounter::Approximate;
    let threads = rayon::current_num_threads();

    let mut parsed: Vec<Trajectory> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let t = Instant::now();
    score_all(&mut parsed, &counter);
    let score_only = n as f64 / t.elapsed().as_secs_f64();
    assert!(
        parsed
            .iter()
            .all(|t| t.scores.tool_rationality == Some(1.0) && t.scores.accuracy == Some(1.0)),
        "bench records are good episodes"
    );

    let t = Instant::now();
    let out: Vec<String> = lines
        .par_iter()
        .map(|l| {
            let mut r: Trajectory = serde_json::from_str(l).unwrap();
            score(&mut r, &counter);
            serde_json::to_string(&r).unwrap()
        })
        .collect();
    let secs = t.elapsed().as_secs_f64();
    let round_trip = n as f64 / secs;
    std::hint::black_box(out);

    println!(
        "judge bench: {n} trajectories ({:.1} MB), {threads} threads",
        bytes as f64 / 1e6
    );
    println!("  score only:                      {score_only:>10.0} trajectories/s");
    println!(
        "  parse + score + serialise JSONL: {round_trip:>10.0} trajectories/s ({:.1} MB/s)",
        bytes as f64 / 1e6 / secs
    );
}
