// Each test crate uses a different subset of these helpers.
#![allow(dead_code)]

//! Shared by tests/serve.rs and tests/replay.rs: a tiny random-weight model behind the real server on an
//! ephemeral port.

use std::sync::OnceLock;
use std::time::Duration;

use burn::backend::NdArray;
use hat::chat::{ChatTemplate, ToolCallFormat};
use hat::model::WeightDtype;
use hat::serve::engine::EngineConfig;
use hat::serve::model::BurnModel;
use hat::serve::server::{App, HttpLimits, RunningServer};
use hat::serve::{agent, build_app, AppOptions};
use hat::tokenizer::{self, TrainOptions, QWEN3_CHAT_TEMPLATE};
use serde_json::Value;
use tempfile::TempDir;

pub const MODEL: &str = "tiny-random";

/// A tokenizer trained once, saved as a Hugging Face directory: on the IFEval prompts and the replay
/// set's system prompts and tools, so the long harness prompts of agent mode and replay encode compactly
/// (the tiny model's context is 4096 tokens).
pub fn tokenizer_dir() -> &'static std::path::Path {
    static DIR: OnceLock<TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let lines = |path: &str| {
            std::fs::read_to_string(path)
                .unwrap()
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .collect::<Vec<_>>()
        };
        let mut corpus: Vec<String> = lines("testdata/ifeval/input_data.jsonl")
            .iter()
            .filter_map(|v| v["prompt"].as_str().map(str::to_string))
            .collect();
        for v in lines("testdata/replay/default.jsonl") {
            corpus.push(
                v["request"]["messages"][0]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            );
            corpus.push(v["request"]["tools"].to_string());
            corpus.push(v["messages"].to_string());
        }
        let opts = TrainOptions {
            vocab_size: 4096,
            min_frequency: 2,
        };
        let tok = tokenizer::train_bpe(corpus, &opts).unwrap();
        let dir = TempDir::new().unwrap();
        tokenizer::save_hf(&tok, dir.path(), QWEN3_CHAT_TEMPLATE, 4096).unwrap();
        dir
    })
    .path()
}

pub fn options() -> AppOptions {
    AppOptions {
        model_name: MODEL.into(),
        random_weights: true,
        weight_updates: false,
        format: ToolCallFormat::Hermes,
        timeout: Duration::from_secs(60),
        default_max_tokens: 16,
        api_key: None,
        engine: EngineConfig {
            queue_capacity: 64,
            max_batch: 16,
            max_context: 4096,
            prefill_chunk: hat::serve::engine::PREFILL_CHUNK,
            max_itl_stretch: hat::serve::engine::MAX_ITL_STRETCH,
        },
    }
}

pub async fn start_with(
    opts: AppOptions,
    limits: HttpLimits,
    with_agent: bool,
) -> (RunningServer, App, String) {
    let dir = tokenizer_dir();
    let tok = tokenizer::load(dir).unwrap();
    let vocab = tok.get_vocab_size(true);
    let mut model =
        BurnModel::<NdArray<f32>>::random("tiny", vocab, 3, WeightDtype::F32, Default::default())
            .unwrap();
    let template = ChatTemplate::from_model_dir(dir).unwrap();
    let agent = with_agent.then(|| {
        agent::load(
            "harness-samples/taolive".as_ref(),
            "testdata/catalog.json".as_ref(),
        )
        .unwrap()
    });
    let scorer = model.scorer();
    let (app, _engine) = build_app(model, tok, template, &opts, agent);
    let _ = app.scorer.set(scorer);
    let server = RunningServer::start(app.clone(), limits, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let base = format!("http://{}", server.addr);
    (server, app, base)
}

pub async fn start() -> (RunningServer, App, String) {
    start_with(
        options(),
        HttpLimits {
            max_body_bytes: 1 << 20,
        },
        false,
    )
    .await
}

/// Our `serve` on the checkpoint in `dir` as model `name`, `max_context` tokens a sequence, in the
/// background of its own runtime (for tests whose client side blocks): `(runtime, server, base URL up
/// to /v1)`. `weight_updates`: accept `POST /update_weights_from_disk`.
pub fn serve_checkpoint(
    dir: &std::path::Path,
    name: &str,
    max_context: usize,
    weight_updates: bool,
) -> (tokio::runtime::Runtime, RunningServer, String) {
    let mut model =
        BurnModel::<NdArray<f32>>::load(dir, WeightDtype::F32, Default::default()).unwrap();
    let scorer = model.scorer();
    let options = AppOptions {
        model_name: name.into(),
        random_weights: false,
        weight_updates,
        timeout: Duration::from_secs(120),
        default_max_tokens: 16,
        engine: EngineConfig {
            queue_capacity: 64,
            max_batch: 8,
            max_context,
            prefill_chunk: hat::serve::engine::PREFILL_CHUNK,
            max_itl_stretch: hat::serve::engine::MAX_ITL_STRETCH,
        },
        ..options()
    };
    let (app, _engine) = build_app(
        model,
        tokenizer::load(dir).unwrap(),
        ChatTemplate::from_model_dir(dir).unwrap(),
        &options,
        None,
    );
    let _ = app.scorer.set(scorer);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = rt
        .block_on(RunningServer::start(
            app,
            HttpLimits {
                max_body_bytes: 1 << 20,
            },
            "127.0.0.1:0".parse().unwrap(),
        ))
        .unwrap();
    let base = format!("http://{}/v1", server.addr);
    (rt, server, base)
}
