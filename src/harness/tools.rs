//! Tool definitions: one JSON file per tool in MCP shape, shown to the model as OpenAI function
//! specs.
//!
//! MCP → OpenAI is a rename (`inputSchema` → `parameters`), see reference §5.3–5.4. Names follow the
//! stricter OpenAI rule `^[a-zA-Z0-9_-]{1,64}$` so the same name works in both worlds.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::problem::{json_problem, Problem};

/// An MCP tool definition (`tools/<name>.json`). Unknown top-level keys are rejected so that a
/// misspelt `input_schema` is reported instead of producing a tool without parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    /// Root-relative file the tool was read from; not part of the JSON.
    #[serde(skip)]
    pub file: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default)]
    pub description: String,
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
    #[serde(
        rename = "outputSchema",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub output_schema: Option<Value>,
    /// MCP behaviour hints (read-only, idempotent, …); untrusted, passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Value>,
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

const JSON_SCHEMA_TYPES: [&str; 7] = [
    "string", "number", "integer", "boolean", "array", "object", "null",
];

impl Tool {
    pub fn parse(file: &str, text: &str) -> Result<Tool, Problem> {
        let mut tool: Tool = serde_json::from_str(text).map_err(|e| json_problem(file, &e))?;
        tool.file = file.to_string();
        Ok(tool)
    }

    /// `{"type":"function","function":{name,description,parameters}}`, as sent to an
    /// OpenAI-compatible endpoint and rendered by chat templates.
    pub fn openai_spec(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.input_schema,
            }
        })
    }

    /// The file text for this tool: pretty JSON with two-space indent and a final newline, the
    /// format of the sample harnesses (used when the augmentation stage rewrites a tool).
    pub fn to_json_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a Tool always serializes");
        text.push('\n');
        text
    }

    /// Names of the top-level parameters, in schema order.
    pub fn parameter_names(&self) -> Vec<&str> {
        self.input_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }
}

/// `^[a-zA-Z0-9_-]{1,64}$` without compiling a regex for every check.
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Checks names (syntax, uniqueness across files), descriptions and input schemas.
pub fn validate_tools(tools: &[Tool], problems: &mut Vec<Problem>) {
    let mut seen: std::collections::BTreeMap<&str, &str> = Default::default();
    for tool in tools {
        if !is_valid_tool_name(&tool.name) {
            problems.push(Problem::field(
                &tool.file,
                "name",
                format!(
                    "{:?} must be 1-64 characters from a-z, A-Z, 0-9, '_' and '-'",
                    tool.name
                ),
            ));
        }
        if let Some(first) = seen.insert(&tool.name, &tool.file) {
            problems.push(Problem::field(
                &tool.file,
                "name",
                format!(
                    "duplicate tool name {:?} (also defined in {first})",
                    tool.name
                ),
            ));
        }
        if tool.description.trim().is_empty() {
            problems.push(Problem::field(
                &tool.file,
                "description",
                "must say what the tool does and when to call it",
            ));
        }
        validate_input_schema(&tool.file, &tool.input_schema, problems);
    }
}

/// An input schema must be an object schema whose `required` names exist in `properties`.
pub fn validate_input_schema(file: &str, schema: &Value, problems: &mut Vec<Problem>) {
    let Some(obj) = schema.as_object() else {
        return problems.push(Problem::field(
            file,
            "inputSchema",
            "must be a JSON Schema object ({\"type\": \"object\", …})",
        ));
    };
    if obj.get("type").and_then(Value::as_str) != Some("object") {
        problems.push(Problem::field(
            file,
            "inputSchema.type",
            "must be \"object\" (tool arguments are a JSON object)",
        ));
    }
    let props = match obj.get("properties") {
        None => None,
        Some(Value::Object(p)) => Some(p),
        Some(_) => {
            problems.push(Problem::field(
                file,
                "inputSchema.properties",
                "must be an object mapping parameter names to schemas",
            ));
            None
        }
    };
    for (name, prop) in props.into_iter().flatten() {
        validate_property(
            file,
            &format!("inputSchema.properties.{name}"),
            prop,
            problems,
        );
    }
    match obj.get("required") {
        None => {}
        Some(Value::Array(required)) => {
            let mut seen = std::collections::BTreeSet::new();
            for (i, r) in required.iter().enumerate() {
                let field = format!("inputSchema.required[{i}]");
                match r.as_str() {
                    None => problems.push(Problem::field(
                        file,
                        field,
                        "must be a parameter name (string)",
                    )),
                    Some(r) if !props.is_some_and(|p| p.contains_key(r)) => {
                        problems.push(Problem::field(
                            file,
                            field,
                            format!("{r:?} is not in inputSchema.properties"),
                        ))
                    }
                    Some(r) if !seen.insert(r) => problems.push(Problem::field(
                        file,
                        field,
                        format!("{r:?} is listed twice"),
                    )),
                    Some(_) => {}
                }
            }
        }
        Some(_) => problems.push(Problem::field(
            file,
            "inputSchema.required",
            "must be an array of parameter names",
        )),
    }
    if let Some(ap) = obj.get("additionalProperties") {
        if !ap.is_boolean() && !ap.is_object() {
            problems.push(Problem::field(
                file,
                "inputSchema.additionalProperties",
                "must be a boolean or a schema object",
            ));
        }
    }
}

fn validate_property(file: &str, field: &str, prop: &Value, problems: &mut Vec<Problem>) {
    let Some(p) = prop.as_object() else {
        return problems.push(Problem::field(file, field, "must be a schema object"));
    };
    let type_ok = |t: &Value| t.as_str().is_some_and(|t| JSON_SCHEMA_TYPES.contains(&t));
    match p.get("type") {
        None => {}
        Some(Value::Array(ts)) if !ts.is_empty() && ts.iter().all(type_ok) => {}
        Some(t) if type_ok(t) => {}
        Some(t) => problems.push(Problem::field(
            file,
            format!("{field}.type"),
            format!(
                "{t} is not a JSON Schema type (one of {})",
                JSON_SCHEMA_TYPES.join(", ")
            ),
        )),
    }
    if let Some(e) = p.get("enum") {
        if !e.as_array().is_some_and(|e| !e.is_empty()) {
            problems.push(Problem::field(
                file,
                format!("{field}.enum"),
                "must be a non-empty array",
            ));
        }
    }
    if let Some(d) = p.get("description") {
        if !d.is_string() {
            problems.push(Problem::field(
                file,
                format!("{field}.description"),
                "must be a string",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems_of(schema: Value) -> Vec<Problem> {
        let mut problems = Vec::new();
        validate_input_schema("tools/t.json", &schema, &mut problems);
        problems
    }

    #[test]
    fn accepts_object_schema_and_no_arg_schema() {
        assert!(problems_of(
            json!({"type":"object","properties":{"q":{"type":"string"}},"required":["q"]})
        )
        .is_empty());
        assert!(problems_of(json!({"type":"object","additionalProperties":false})).is_empty());
    }

    #[test]
    fn required_must_be_declared() {
        let p = problems_of(
            json!({"type":"object","properties":{"q":{"type":"string"}},"required":["q","x"]}),
        );
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].field.as_deref(), Some("inputSchema.required[1]"));
    }

    #[test]
    fn property_types_are_checked() {
        let p = problems_of(
            json!({"type":"object","properties":{"q":{"type":"text"},"e":{"enum":[]}}}),
        );
        let fields: Vec<_> = p.iter().map(|p| p.field.clone().unwrap()).collect();
        assert_eq!(
            fields,
            [
                "inputSchema.properties.q.type",
                "inputSchema.properties.e.enum"
            ]
        );
    }

    #[test]
    fn openai_spec_renames_input_schema() {
        let t = Tool::parse(
            "tools/a.json",
            r#"{"name":"a","description":"d","inputSchema":{"type":"object"}}"#,
        )
        .unwrap();
        assert_eq!(
            t.openai_spec(),
            json!({"type":"function","function":{"name":"a","description":"d","parameters":{"type":"object"}}})
        );
    }

    #[test]
    fn tool_names_follow_the_openai_rule() {
        assert!(is_valid_tool_name("get_product-detail2"));
        assert!(!is_valid_tool_name("get.product"));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name(&"a".repeat(65)));
    }
}
