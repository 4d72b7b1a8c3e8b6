//! Proposals from an OpenAI-compatible endpoint (a strong model, ours or any other): the cluster, its
//! example episodes and the harness files it points at go into one prompt; the answer must be a JSON
//! object of file edits. The prompt and the raw answer are kept with the proposal, whatever the loop
//! later decides about it.

use anyhow::{bail, Context as _, Result};
use serde::Deserialize;

use super::candidate::FileEdit;
use super::diagnose::{transcript, Cluster};
use super::propose::{Context, Proposal};
use crate::judge::endpoint::Endpoint;

#[derive(Deserialize)]
struct Answer {
    title: String,
    #[serde(default)]
    rationale: String,
    edits: Vec<FileEdit>,
}

/// The prompt for `cluster`.
pub fn prompt(cluster: &Cluster, cx: &Context<'_>) -> String {
    let mut p = format!(
        "You maintain the harness (system prompt pipeline, tools, skills, hooks, limits) of an AI host \
for a live-stream shopping room. The host model stays fixed; you may only edit harness files.\n\n\
Failure cluster: {} — {} episodes.\nIntents: {:?}\nChosen instead: {:?}\n\n",
        cluster.key, cluster.episodes, cluster.by_intent, cluster.instead
    );
    for id in &cluster.examples {
        if let Some(t) = cx.episodes.iter().find(|t| &t.id == id) {
            p += &format!("Episode {id}:\n{}\n", transcript(t));
        }
    }
    for file in &cluster.files {
        if let Some(f) = cx.harness.files().get(file) {
            p += &format!(
                "File {file}:\n```\n{}\n```\n\n",
                String::from_utf8_lossy(&f.bytes)
            );
        }
    }
    p += "Propose one small edit that makes the host succeed on these episodes without hurting \
others. Answer with one JSON object only: {\"title\": \"…\", \"rationale\": \"…\", \"edits\": \
[{\"path\": \"<file relative to the harness root>\", \"content\": \"<the whole new file text>\"}]}.";
    p
}

/// Ask `endpoint` for an edit for `cluster`.
pub fn propose(endpoint: &Endpoint, cluster: &Cluster, cx: &Context<'_>) -> Result<Proposal> {
    let prompt = prompt(cluster, cx);
    let (response, _cached) = endpoint.complete(&prompt)?;
    let answer = parse(&response).with_context(|| {
        format!(
            "the proposal from {} is not a JSON object of edits",
            endpoint.model()
        )
    })?;
    Ok(Proposal {
        title: answer.title,
        cluster: cluster.key.to_string(),
        rationale: answer.rationale,
        edits: answer.edits,
        source: endpoint.model().to_string(),
        prompt: Some(prompt),
        response: Some(response),
    })
}

/// The JSON object of an answer, bare or inside a code fence.
fn parse(response: &str) -> Result<Answer> {
    let (Some(start), Some(end)) = (response.find('{'), response.rfind('}')) else {
        bail!("no JSON object in the answer");
    };
    if end < start {
        bail!("no JSON object in the answer");
    }
    Ok(serde_json::from_str(&response[start..=end])?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_read_bare_or_fenced_and_garbage_is_an_error() {
        let bare = r#"{"title":"t","edits":[{"path":"a.md","content":"x"}]}"#;
        let fenced = format!("Here you go:\n```json\n{bare}\n```\n");
        for text in [bare.to_string(), fenced] {
            let a = parse(&text).unwrap();
            assert_eq!(a.title, "t");
            assert_eq!(a.edits[0].path, "a.md");
        }
        assert!(parse("no edits today").is_err());
        assert!(parse(r#"{"title": "no edits key"}"#).is_err());
    }
}
