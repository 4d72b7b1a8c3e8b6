//! Hugging Face chat templates rendered exactly as transformers' `apply_chat_template(...,
//! tokenize=False)` renders them.
//!
//! The Jinja environment mirrors `transformers.utils.chat_template_utils`: `trim_blocks` and
//! `lstrip_blocks` on, loop controls, `tojson` = Python `json.dumps`, `raise_exception`,
//! `strftime_now`, and the `{% generation %}` block. Values print the way Python prints them.
//! Inputs are prepared as `apply_chat_template` prepares them: `None`-valued message keys
//! dropped, reasoning aliased under `reasoning_content` and `thinking`, `tools`/`documents`
//! passed as `None` when absent, and the tokenizer's named special tokens available as variables.

use super::continue_final::{self, REASONING_FIELDS};
use super::py_methods::{self, Side};
use super::pyjson::{self, DumpOptions};
use super::pyrepr::py_str;
use super::strftime::strftime_now;
use super::tool_calls::ToolCallFormat;
use anyhow::{anyhow, bail, Context, Result};
use minijinja::value::{Kwargs, Rest, Value, ValueKind};
use minijinja::{AutoEscape, Environment, Error, ErrorKind};
use serde_json::{Map, Value as Json};
use std::path::Path;

const TEMPLATE_NAME: &str = "chat_template";

/// Variables `apply_chat_template` sets itself; extra kwargs may not reuse them.
const RESERVED: [&str; 5] = [
    "messages",
    "tools",
    "documents",
    "add_generation_prompt",
    "continue_final_message",
];

/// The named special tokens transformers passes to every render (`special_tokens_map`).
const SPECIAL_TOKENS: [&str; 7] = [
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
];

/// What one render sees: the `apply_chat_template` arguments that reach the template.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RenderInput {
    /// OpenAI-style chat messages (objects with `role`, `content`, `tool_calls`, ...).
    pub messages: Vec<Json>,
    /// OpenAI function tools; `None` renders as Python `None`.
    pub tools: Option<Vec<Json>>,
    /// RAG documents; `None` unless given.
    pub documents: Option<Vec<Json>>,
    pub add_generation_prompt: bool,
    /// Leave the last message open for the model to continue: the message field to continue
    /// (`content`, or a reasoning field), as `continue_final_message=True`/`"field"`.
    pub continue_final_message: Option<String>,
    /// Any other template variables, e.g. `enable_thinking`.
    pub kwargs: Map<String, Json>,
}

impl RenderInput {
    /// Reads `{"messages": [...], "tools": [...]|null, "add_generation_prompt": bool, ...}`;
    /// every other key becomes a template kwarg (`enable_thinking`, `bos_token`, ...).
    pub fn from_json(value: &Json) -> Result<RenderInput> {
        let obj = value
            .as_object()
            .ok_or_else(|| anyhow!("render input must be a JSON object"))?;
        let messages = obj
            .get("messages")
            .ok_or_else(|| anyhow!("render input has no `messages` field"))?
            .as_array()
            .ok_or_else(|| anyhow!("`messages` must be an array"))?
            .clone();
        let list = |field: &str| -> Result<Option<Vec<Json>>> {
            match obj.get(field) {
                None | Some(Json::Null) => Ok(None),
                Some(Json::Array(a)) => Ok(Some(a.clone())),
                Some(other) => bail!("`{field}` must be an array or null, got {other}"),
            }
        };
        let add_generation_prompt = match obj.get("add_generation_prompt") {
            None | Some(Json::Null) => false,
            Some(Json::Bool(b)) => *b,
            Some(other) => bail!("`add_generation_prompt` must be a boolean, got {other}"),
        };
        let continue_final_message = match obj.get("continue_final_message") {
            None | Some(Json::Null) | Some(Json::Bool(false)) => None,
            Some(Json::Bool(true)) => Some("content".to_string()),
            Some(Json::String(field)) => Some(field.clone()),
            Some(other) => {
                bail!("`continue_final_message` must be a boolean or a field name, got {other}")
            }
        };
        let kwargs = obj
            .iter()
            .filter(|(k, _)| !RESERVED.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(RenderInput {
            messages,
            tools: list("tools")?,
            documents: list("documents")?,
            add_generation_prompt,
            continue_final_message,
            kwargs,
        })
    }
}

/// A compiled chat template plus the special-token variables of the tokenizer it came with.
pub struct ChatTemplate {
    env: Environment<'static>,
    /// The source text, which `continue_final_message` checks for the field it continues.
    source: String,
    special_tokens: Map<String, Json>,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("special_tokens", &self.special_tokens)
            .finish_non_exhaustive()
    }
}

impl ChatTemplate {
    /// Compiles template source text.
    pub fn from_str(source: &str) -> Result<ChatTemplate> {
        let mut env = environment();
        env.add_template_owned(TEMPLATE_NAME, rewrite_generation_blocks(source))
            .map_err(|e| anyhow!("{e:#}"))
            .context("compiling chat template")?;
        Ok(ChatTemplate {
            env,
            source: source.to_string(),
            special_tokens: Map::new(),
        })
    }

    /// Compiles a `.jinja` file.
    pub fn from_file(path: &Path) -> Result<ChatTemplate> {
        let source = std::fs::read_to_string(path)
            .with_context(|| format!("reading chat template {}", path.display()))?;
        ChatTemplate::from_str(&source)
            .with_context(|| format!("in chat template {}", path.display()))
    }

    /// Loads a Hugging Face model directory's template: `chat_template.jinja` if present (the
    /// transformers 5 layout), else the `chat_template` field of `tokenizer_config.json` (a string,
    /// or a list of named templates of which `default` is used). Special tokens named in
    /// `tokenizer_config.json` become template variables, as transformers provides them.
    pub fn from_model_dir(dir: &Path) -> Result<ChatTemplate> {
        let config_path = dir.join("tokenizer_config.json");
        let config: Json = if config_path.exists() {
            let text = std::fs::read_to_string(&config_path)
                .with_context(|| format!("reading {}", config_path.display()))?;
            serde_json::from_str(&text)
                .with_context(|| format!("parsing {}", config_path.display()))?
        } else {
            Json::Null
        };
        let jinja_path = dir.join("chat_template.jinja");
        let mut template = if jinja_path.exists() {
            ChatTemplate::from_file(&jinja_path)?
        } else {
            let source = template_from_config(&config)
                .with_context(|| format!("in {}", config_path.display()))?;
            ChatTemplate::from_str(&source)
                .with_context(|| format!("chat_template of {}", config_path.display()))?
        };
        for name in SPECIAL_TOKENS {
            let token = match config.get(name) {
                Some(Json::String(s)) => Some(s.clone()),
                Some(Json::Object(o)) => {
                    o.get("content").and_then(Json::as_str).map(str::to_string)
                }
                _ => None,
            };
            if let Some(token) = token {
                template
                    .special_tokens
                    .insert(name.to_string(), Json::String(token));
            }
        }
        Ok(template)
    }

    /// The format this template writes an assistant's tool calls in: a probe call rendered through
    /// it, read back. What a model trained on the template writes, whatever a harness declares
    /// (this toolkit's checkpoints carry the Qwen3 template, hermes, also under an XML harness); a
    /// template that cannot render tool calls is taken for hermes, Qwen3's.
    pub fn tool_call_format(&self) -> ToolCallFormat {
        let probe = RenderInput {
            messages: vec![
                serde_json::json!({"role": "user", "content": "?"}),
                serde_json::json!({"role": "assistant", "content": "", "tool_calls": [
                    {"type": "function", "function": {"name": "probe", "arguments": {}}}]}),
            ],
            ..RenderInput::default()
        };
        match self.render(&probe) {
            Ok(text)
                if text.contains(&format!("{}probe>", ToolCallFormat::Qwen3Xml.name_open())) =>
            {
                ToolCallFormat::Qwen3Xml
            }
            _ => ToolCallFormat::Hermes,
        }
    }

    /// The special-token variables every render sees (kwargs override them, as in transformers).
    pub fn special_tokens(&self) -> &Map<String, Json> {
        &self.special_tokens
    }

    /// Renders one conversation to text.
    pub fn render(&self, input: &RenderInput) -> Result<String> {
        if input.messages.is_empty() {
            bail!("cannot apply a chat template to an empty conversation");
        }
        if let Some(k) = input.kwargs.keys().find(|k| RESERVED.contains(&k.as_str())) {
            bail!("template kwarg `{k}` clashes with an apply_chat_template argument");
        }
        let messages = input
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| normalize_message(m).with_context(|| format!("messages[{i}]")))
            .collect::<Result<Vec<_>>>()?;
        let mut messages = messages;
        let continued = match &input.continue_final_message {
            Some(_) if input.add_generation_prompt => bail!(
                "continue_final_message and add_generation_prompt are not compatible: one continues the last message, the other starts a new one"
            ),
            Some(field) => Some(continue_final::mark(&mut messages, field, &self.source)?),
            None => None,
        };
        let mut ctx = self.special_tokens.clone();
        ctx.extend(input.kwargs.clone());
        ctx.insert("messages".into(), Json::Array(messages));
        ctx.insert(
            "tools".into(),
            input.tools.clone().map_or(Json::Null, Json::Array),
        );
        ctx.insert(
            "documents".into(),
            input.documents.clone().map_or(Json::Null, Json::Array),
        );
        ctx.insert(
            "add_generation_prompt".into(),
            Json::Bool(input.add_generation_prompt),
        );
        let template = self
            .env
            .get_template(TEMPLATE_NAME)
            .map_err(|e| anyhow!("{e:#}"))?;
        let rendered = template
            .render(Value::from_serialize(&ctx))
            .map_err(|e| anyhow!("{e:#}"))
            .context("rendering chat template")?;
        match continued {
            Some(final_message) => continue_final::cut(&rendered, &final_message),
            None => Ok(rendered),
        }
    }
}

/// The template text in a `tokenizer_config.json`.
fn template_from_config(config: &Json) -> Result<String> {
    match config.get("chat_template") {
        Some(Json::String(s)) => Ok(s.clone()),
        Some(Json::Array(named)) => named
            .iter()
            .find(|t| t.get("name").and_then(Json::as_str) == Some("default"))
            .and_then(|t| t.get("template"))
            .and_then(Json::as_str)
            .map(str::to_string)
            .ok_or_else(|| anyhow!("`chat_template` lists named templates but none is `default`")),
        Some(_) => bail!("`chat_template` must be a string or a list of named templates"),
        None => bail!("no chat_template.jinja and no `chat_template` field"),
    }
}

/// What `_normalize_chat_messages` and `_alias_reasoning_fields` do to one message: drop keys
/// whose value is null, then, if any reasoning field is set, rebuild the message as
/// `{"thinking": r, **message, "reasoning_content": r}` (Python dict order included).
fn normalize_message(message: &Json) -> Result<Json> {
    let obj = message
        .as_object()
        .ok_or_else(|| anyhow!("a chat message must be a JSON object, got {message}"))?;
    let kept: Map<String, Json> = obj
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let reasoning = REASONING_FIELDS.iter().find_map(|f| kept.get(*f)).cloned();
    let Some(reasoning) = reasoning else {
        return Ok(Json::Object(kept));
    };
    let mut out = Map::new();
    out.insert("thinking".into(), reasoning.clone());
    // serde_json's preserve_order map keeps a key's first position when its value is replaced,
    // like a Python dict.
    out.extend(kept);
    out.insert("reasoning_content".into(), reasoning);
    Ok(Json::Object(out))
}

/// `{% generation %}...{% endgeneration %}` (transformers' assistant-mask extension) renders its
/// body unchanged; minijinja has no custom tags, so it becomes an always-true `if` with the same
/// whitespace control, which renders identically.
fn rewrite_generation_blocks(source: &str) -> String {
    // The patterns are constants, so they always compile.
    let open = regex::Regex::new(r"\{%([-+]?)\s*generation\s*([-+]?)%\}").expect("valid regex");
    let close = regex::Regex::new(r"\{%([-+]?)\s*endgeneration\s*([-+]?)%\}").expect("valid regex");
    let source = open.replace_all(source, "{%${1} if true ${2}%}");
    close
        .replace_all(&source, "{%${1} endif ${2}%}")
        .into_owned()
}

/// The Jinja environment transformers builds in `_cached_compile_jinja_template`.
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_keep_trailing_newline(false);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_unknown_method_callback(py_methods::call);
    env.set_formatter(|out, _state, value| out.write_str(&py_str(value)).map_err(Error::from));
    env.add_filter("tojson", tojson);
    env.add_filter("string", |v: Value| py_str(&v));
    env.add_filter("join", join);
    env.add_filter("trim", |s: String, chars: Option<String>| {
        py_methods::strip(&s, chars.as_deref(), Side::Both).to_string()
    });
    // Jinja2's `sequence` test accepts anything with a length and indexing: strings and dicts too.
    env.add_test("sequence", |v: Value| {
        matches!(
            v.kind(),
            ValueKind::Seq | ValueKind::String | ValueKind::Map
        )
    });
    // In Python `True` is an int, so Jinja2 counts booleans as numbers (but not as integers).
    env.add_test("number", |v: Value| {
        matches!(v.kind(), ValueKind::Number | ValueKind::Bool)
    });
    env.add_function(
        "raise_exception",
        |message: String| -> Result<Value, Error> {
            Err(Error::new(ErrorKind::InvalidOperation, message))
        },
    );
    env.add_function("strftime_now", |format: String| -> Result<String, Error> {
        strftime_now(&format).map_err(|e| Error::new(ErrorKind::InvalidOperation, e))
    });
    env
}

/// Jinja2's `join(value, d='', attribute=None)`: items are converted with Python `str`, so
/// non-string items print as Python prints them.
fn join(value: &Value, sep: Option<String>, kwargs: Kwargs) -> Result<String, Error> {
    let attribute: Option<String> = kwargs.get("attribute")?;
    kwargs.assert_all_used()?;
    let mut out = String::new();
    for (i, item) in value.try_iter()?.enumerate() {
        if i > 0 {
            out.push_str(sep.as_deref().unwrap_or(""));
        }
        let item = match &attribute {
            Some(path) => path.split('.').try_fold(item, |v, key| v.get_attr(key))?,
            None => item,
        };
        out.push_str(&py_str(&item));
    }
    Ok(out)
}

/// transformers' `tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)`,
/// accepting the options positionally or by keyword.
fn tojson(value: &Value, args: Rest<Value>) -> Result<Value, Error> {
    let (positional, kwargs) = match args.split_last() {
        Some((last, rest)) if last.is_kwargs() => (rest, Some(Kwargs::try_from(last.clone())?)),
        _ => (&args[..], None),
    };
    if positional.len() > 4 {
        return Err(Error::new(
            ErrorKind::TooManyArguments,
            "tojson takes at most 4 arguments",
        ));
    }
    let arg = |i: usize, name: &str| -> Result<Option<Value>, Error> {
        let v = match positional.get(i) {
            Some(v) => Some(v.clone()),
            None => match &kwargs {
                Some(kw) => kw.get::<Option<Value>>(name)?,
                None => None,
            },
        };
        Ok(v.filter(|v| !v.is_none() && !v.is_undefined()))
    };
    let invalid = |msg: String| Error::new(ErrorKind::InvalidOperation, msg);
    let mut opts = DumpOptions::default();
    if let Some(v) = arg(0, "ensure_ascii")? {
        opts.ensure_ascii = v.is_true();
    }
    if let Some(v) = arg(1, "indent")? {
        opts.indent = Some(match (v.as_str(), v.as_i64()) {
            (Some(s), _) if v.kind() == ValueKind::String => s.to_string(),
            // Python: `' ' * indent`, so zero or negative means newlines without indentation.
            (_, Some(n)) => " ".repeat(n.max(0) as usize),
            _ => {
                return Err(invalid(format!(
                    "tojson indent must be int or str, not {}",
                    v.kind()
                )))
            }
        });
    }
    if let Some(v) = arg(2, "separators")? {
        let parts: Vec<Value> = v.try_iter()?.collect();
        match parts.as_slice() {
            [a, b] if a.kind() == ValueKind::String && b.kind() == ValueKind::String => {
                opts.separators = Some((py_str(a), py_str(b)));
            }
            _ => {
                return Err(invalid(
                    "tojson separators must be a pair of strings".into(),
                ))
            }
        }
    }
    if let Some(v) = arg(3, "sort_keys")? {
        opts.sort_keys = v.is_true();
    }
    if let Some(kw) = &kwargs {
        kw.assert_all_used()?;
    }
    let text = pyjson::dumps(value, &opts).map_err(invalid)?;
    Ok(Value::from_safe_string(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(source: &str, input: Json) -> String {
        ChatTemplate::from_str(source)
            .unwrap()
            .render(&RenderInput::from_json(&input).unwrap())
            .unwrap()
    }

    #[test]
    fn the_tool_call_format_is_the_one_the_template_writes() {
        let qwen3 = ChatTemplate::from_str(crate::tokenizer::QWEN3_CHAT_TEMPLATE).unwrap();
        assert_eq!(qwen3.tool_call_format(), ToolCallFormat::Hermes);
        // The XML call Qwen3.5's template writes, cut down to the call.
        let xml = ChatTemplate::from_str(
            "{% for m in messages %}{% for c in m.tool_calls or [] %}<tool_call>\n<function={{ c.function.name }}>\n</function>\n</tool_call>{% endfor %}{% endfor %}",
        )
        .unwrap();
        assert_eq!(xml.tool_call_format(), ToolCallFormat::Qwen3Xml);
        // No tool calls rendered at all: Qwen3's hermes.
        let plain = ChatTemplate::from_str("{{ messages[0].content }}").unwrap();
        assert_eq!(plain.tool_call_format(), ToolCallFormat::Hermes);
    }

    #[test]
    fn values_print_as_python_prints_them() {
        let out = render(
            "{{ x }}|{{ x | string }}|{{ x | tojson }}|{{ y }}|{{ z is none }}|{{ 'a' ~ flag }}",
            json!({"messages": [{}], "x": {"a": [1.0, true, null, 1e-7]}, "y": 0.5, "z": null, "flag": false}),
        );
        assert_eq!(
            out,
            "{'a': [1.0, True, None, 1e-07]}|{'a': [1.0, True, None, 1e-07]}|{\"a\": [1.0, true, null, 1e-07]}|0.5|True|aFalse"
        );
    }

    #[test]
    fn tojson_accepts_python_options() {
        let out = render(
            "{{ v | tojson(indent=2, sort_keys=true) }}|{{ v | tojson(separators=(',', ':')) }}|{{ v | tojson(true) }}",
            json!({"messages": [{}], "v": {"b": "é", "a": [1]}}),
        );
        assert_eq!(
            out,
            "{\n  \"a\": [\n    1\n  ],\n  \"b\": \"é\"\n}|{\"b\":\"é\",\"a\":[1]}|{\"b\": \"\\u00e9\", \"a\": [1]}"
        );
    }

    #[test]
    fn messages_are_normalized_like_transformers() {
        let out = render(
            "{% for m in messages %}{{ m | tojson }}\n{% endfor %}",
            json!({"messages": [
                {"role": "assistant", "content": null, "reasoning": "r", "tool_calls": null},
                {"role": "user", "content": "hi"}
            ]}),
        );
        assert_eq!(
            out,
            "{\"thinking\": \"r\", \"role\": \"assistant\", \"reasoning\": \"r\", \"reasoning_content\": \"r\"}\n{\"role\": \"user\", \"content\": \"hi\"}\n"
        );
    }

    #[test]
    fn generation_blocks_and_raise_exception() {
        let src =
            "{% for m in messages %}{% generation %}{{ m.content }}{% endgeneration %}{% endfor %}";
        assert_eq!(
            render(src, json!({"messages": [{"role": "user", "content": "a"}]})),
            "a"
        );
        let t = ChatTemplate::from_str("{{ raise_exception('bad role') }}").unwrap();
        let input = RenderInput::from_json(&json!({"messages": [{}]})).unwrap();
        let err = t.render(&input).unwrap_err();
        assert!(format!("{err:#}").contains("bad role"), "{err:#}");
    }

    #[test]
    fn bad_inputs_are_errors() {
        assert!(RenderInput::from_json(&json!({"tools": []})).is_err());
        assert!(RenderInput::from_json(&json!({"messages": {}})).is_err());
        assert!(RenderInput::from_json(&json!({"messages": [], "tools": "x"})).is_err());
        let t = ChatTemplate::from_str("{{ messages[0].content.startswith('x') }}").unwrap();
        let input = RenderInput::from_json(&json!({"messages": [42]})).unwrap();
        assert!(t.render(&input).is_err());
        assert!(ChatTemplate::from_str("{% if %}").is_err());
    }
}
