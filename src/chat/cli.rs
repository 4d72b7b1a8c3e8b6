//! `hat chat ...`: render a chat template or parse generated text from the command line.

use super::{parse_assistant_output, ChatTemplate, RenderInput, ToolCallFormat};
use anyhow::{bail, Context, Result};
use clap::Subcommand;
use serde_json::Value as Json;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, Subcommand)]
pub enum ChatCommand {
    /// Render a conversation with a chat template, exactly as transformers'
    /// `apply_chat_template(..., tokenize=False)` would.
    ///
    /// The input is a JSON object: `messages`, `tools` (array or null), `add_generation_prompt`,
    /// optional `documents`, and any other key as a template variable (e.g. `enable_thinking`).
    /// A golden case file (`{"template", "input", "expected"}`) is accepted too; its `input` is
    /// used. The rendered text goes to stdout with nothing added.
    Render {
        /// Jinja template file.
        #[arg(
            long,
            conflicts_with = "model_dir",
            required_unless_present = "model_dir"
        )]
        template: Option<PathBuf>,
        /// Hugging Face model directory (chat_template.jinja or tokenizer_config.json); its
        /// special tokens (bos_token, eos_token, ...) become template variables.
        #[arg(long)]
        model_dir: Option<PathBuf>,
        /// Input JSON file, or `-` for stdin.
        #[arg(long, default_value = "-")]
        input: PathBuf,
    },
    /// Parse generated assistant text from stdin into an OpenAI assistant message (JSON):
    /// `reasoning_content`, `content`, `tool_calls`.
    ///
    /// Exit status 1 with `{"error": {"kind", "offset", "message"}}` on stdout when the text is
    /// malformed.
    Parse {
        /// Tool-call format: hermes (Qwen3 JSON) or qwen3_xml (Qwen3.5/Qwen3-Coder XML).
        #[arg(long, default_value = "hermes")]
        format: ToolCallFormat,
        /// JSON file with the offered tools (an array, or an object with a `tools` array):
        /// call names are checked and XML values typed by the tool schemas.
        #[arg(long)]
        tools: Option<PathBuf>,
    },
}

/// Runs one command; returns the exit status.
pub fn run(cmd: &ChatCommand, stdin: &mut dyn Read, out: &mut dyn Write) -> Result<i32> {
    match cmd {
        ChatCommand::Render {
            template,
            model_dir,
            input,
        } => {
            let template = match (template, model_dir) {
                (Some(t), _) => ChatTemplate::from_file(t)?,
                (None, Some(d)) => ChatTemplate::from_model_dir(d)?,
                (None, None) => bail!("give --template or --model-dir"),
            };
            let text = read_input(input, stdin)?;
            let value: Json = serde_json::from_str(&text)
                .with_context(|| format!("parsing {} as JSON", input.display()))?;
            let value = match value.get("input") {
                Some(inner) if value.get("messages").is_none() => inner.clone(),
                _ => value,
            };
            let input_desc = input.display();
            let render_input =
                RenderInput::from_json(&value).with_context(|| format!("in {input_desc}"))?;
            let rendered = template
                .render(&render_input)
                .with_context(|| format!("rendering {input_desc}"))?;
            out.write_all(rendered.as_bytes())?;
            Ok(0)
        }
        ChatCommand::Parse { format, tools } => {
            let tools = tools.as_deref().map(read_tools).transpose()?;
            let mut text = String::new();
            stdin
                .read_to_string(&mut text)
                .context("reading generated text from stdin")?;
            match parse_assistant_output(&text, *format, tools.as_deref()) {
                Ok(parsed) => {
                    serde_json::to_writer_pretty(&mut *out, &parsed.to_message(""))?;
                    writeln!(out)?;
                    Ok(0)
                }
                Err(e) => {
                    let report = serde_json::json!({"error": {
                        "kind": e.kind.name(), "offset": e.offset, "message": e.to_string()}});
                    serde_json::to_writer_pretty(&mut *out, &report)?;
                    writeln!(out)?;
                    Ok(1)
                }
            }
        }
    }
}

fn read_input(path: &Path, stdin: &mut dyn Read) -> Result<String> {
    if path == Path::new("-") {
        let mut s = String::new();
        stdin.read_to_string(&mut s).context("reading stdin")?;
        Ok(s)
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    }
}

fn read_tools(path: &Path) -> Result<Vec<Json>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let value: Json =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    match value {
        Json::Array(a) => Ok(a),
        Json::Object(mut o) => match o.remove("tools") {
            Some(Json::Array(a)) => Ok(a),
            _ => bail!("{}: expected a `tools` array", path.display()),
        },
        _ => bail!("{}: expected a JSON array of tools", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_reports_errors_as_json() {
        let cmd = ChatCommand::Parse {
            format: ToolCallFormat::Hermes,
            tools: None,
        };
        let mut out = Vec::new();
        let code = run(&cmd, &mut "<tool_call>{".as_bytes(), &mut out).unwrap();
        assert_eq!(code, 1);
        let v: Json = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["error"]["kind"], "unclosed_tool_call");
        let mut out = Vec::new();
        let text = "hi\n<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}</tool_call>";
        assert_eq!(run(&cmd, &mut text.as_bytes(), &mut out).unwrap(), 0);
        let v: Json = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["content"], "hi");
        assert_eq!(v["tool_calls"][0]["function"]["arguments"], "{\"a\": 1}");
    }

    #[test]
    fn render_accepts_golden_case_files_on_stdin() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/chat");
        let case = std::fs::read_to_string(dir.join("cases/qwen3_tools_with_system.json")).unwrap();
        let expected: Json = serde_json::from_str(&case).unwrap();
        let cmd = ChatCommand::Render {
            template: Some(dir.join("templates/qwen3.jinja")),
            model_dir: None,
            input: PathBuf::from("-"),
        };
        let mut out = Vec::new();
        assert_eq!(run(&cmd, &mut case.as_bytes(), &mut out).unwrap(), 0);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            expected["expected"].as_str().unwrap()
        );
    }
}
