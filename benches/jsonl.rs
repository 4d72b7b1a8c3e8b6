//! Read-parse-write throughput of the JSONL layer on typical trajectory records, against plain serde_json
//! parsing and serialising of the same bytes. Run: `cargo bench --bench jsonl` (or `make bench`).

use std::io::Cursor;
use std::time::Instant;

use hat::jsonl::{JsonlWriter, LineReader, OnError, Records};
use hat::record::Trajectory;

/// A record shaped like a teacher rollout: system prompt, tools, a tool call and its result, a reply.
fn typical_record(i: usize) -> String {
    let tools: Vec<_> = (0..12)
        .map(|t| {
            serde_json::json!({"type": "function", "function": {
                "name": format!("tool_{t}"),
                "description": "查询商品库存 / Look up the stock of a product by SKU. 返回每个规格的库存数量。",
                "parameters": {"type": "object", "properties": {
                    "product_id": {"type": "string", "description": "商品ID"},
                    "sku_id": {"type": "string", "description": "规格ID, optional"}},
                    "required": ["product_id"]}}})
        })
        .collect();
    let record = serde_json::json!({
        "id": format!("task-{i}#hsa{}", i % 8),
        "task": {"intent": "product_qa", "room": {"product_id": "p-0042", "viewers": 1532},
                 "viewer": {"name": "小王", "level": 3},
                 "expected": {"skill": "product-qa", "tool_calls": [{"tool": "check_inventory", "args": {"product_id": "p-0042"}}],
                              "facts": ["¥199", "库存 23 件"]}},
        "harness": {"name": "taolive", "version": "1.2.0", "hash": "sha256:9f2c4e0b7d1a", "variant": {"seed": i, "ops": [{"op": "rename_tool", "from": "check_inventory", "to": "stockLookup"}]},
                    "names": {"tools": {"check_inventory": "stockLookup"}}},
        "tools": tools,
        "messages": [
            {"role": "system", "content": "你是淘宝直播间的AI主播小美。回答观众关于当前商品的问题，语气亲切、简洁。每条回复不超过80字。不得使用绝对化用语。\n当前商品：轻薄羽绒服（p-0042），¥199。".repeat(3)},
            {"role": "user", "content": "这件羽绒服还有L码吗？黑色的"},
            {"role": "assistant", "content": null, "reasoning_content": "观众问库存，需要调用库存工具。",
             "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "stockLookup", "arguments": "{\"product_id\": \"p-0042\", \"sku_id\": \"black-L\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "{\"product_id\": \"p-0042\", \"sku_id\": \"black-L\", \"stock\": 23}"},
            {"role": "assistant", "content": "有的亲～黑色L码还有23件，现在下单¥199，喜欢的宝宝抓紧哦！"}
        ],
        "scores": {"accuracy": 1.0, "effectiveness": 0.9, "tool_rationality": 1.0, "skill_selection": 1.0, "judge": "verifiable"},
        "meta": {"source": "oracle", "stage": "hsa-sft", "retries": 0, "latency_ms": 812}
    });
    serde_json::to_string(&record).unwrap()
}

fn main() {
    let n = 20_000;
    let lines: Vec<String> = (0..n).map(typical_record).collect();
    let input = lines.join("\n") + "\n";
    let mb = input.len() as f64 / 1e6;
    println!(
        "jsonl bench: {n} typical trajectory records, {mb:.1} MB ({} bytes/record)",
        input.len() / n
    );

    let best_of = |f: &dyn Fn() -> usize| {
        (0..5)
            .map(|_| {
                let t = Instant::now();
                assert_eq!(f(), n);
                t.elapsed().as_secs_f64()
            })
            .fold(f64::MAX, f64::min)
    };

    let plain = best_of(&|| {
        let mut out = Vec::with_capacity(input.len());
        let mut count = 0;
        for line in input.lines() {
            let record: Trajectory = serde_json::from_str(line).unwrap();
            serde_json::to_writer(&mut out, &record).unwrap();
            out.push(b'\n');
            count += 1;
        }
        count
    });
    let layer = best_of(&|| {
        let records: Records<Trajectory> = Records::new(
            LineReader::from_reader("bench", Cursor::new(input.clone().into_bytes())),
            OnError::Fail,
        );
        let mut writer = JsonlWriter::from_writer(std::io::sink());
        let mut count = 0;
        for record in records {
            writer.write(&record.unwrap()).unwrap();
            count += 1;
        }
        writer.finish().unwrap();
        count
    });
    for (name, secs) in [("plain serde_json", plain), ("hat::jsonl", layer)] {
        println!(
            "  {name:<17} {:>9.0} records/s  {:>7.1} MB/s",
            n as f64 / secs,
            mb / secs
        );
    }
    println!(
        "  overhead: {:.2}x plain serde_json (target <= 1.5x)",
        layer / plain
    );
}
