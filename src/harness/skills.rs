//! Skills in the Agent Skills layout: `skills/<name>/SKILL.md`, YAML front matter + Markdown body.
//!
//! Front matter fields and limits are those of the Agent Skills specification (reference §5.1):
//! `name` (1–64 of `a-z0-9-`, no leading, trailing or doubled `-`, equal to the directory name),
//! `description` (1–1024 characters: what the skill does and when to use it), optional `license`,
//! `compatibility` (≤ 500 characters), `metadata` (string → string) and `allowed-tools` (a
//! space-separated string or a list). Other keys are rejected.
//!
//! Relative Markdown links in the body (`[rules](references/RULES.md)`) are skill references: they
//! are resolved against the skill's directory and must stay inside the harness and exist.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::files::FileSet;
use super::paths::{normalize_relative, parent_of};
use super::problem::{field_from_serde_message, Problem};

pub const SKILL_FILE: &str = "SKILL.md";
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
pub const MAX_COMPATIBILITY_CHARS: usize = 500;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillFrontMatter {
    pub name: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BTreeMap<String, String>>,
    #[serde(
        rename = "allowed-tools",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub allowed_tools: Option<AllowedTools>,
}

/// `allowed-tools` may be written either way; [`AllowedTools::names`] gives the list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AllowedTools {
    Spaced(String),
    List(Vec<String>),
}

impl AllowedTools {
    pub fn names(&self) -> Vec<&str> {
        match self {
            AllowedTools::Spaced(s) => s.split_whitespace().collect(),
            AllowedTools::List(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// Root-relative `SKILL.md` path, e.g. `skills/product-qa/SKILL.md`.
    pub file: String,
    pub front: SkillFrontMatter,
    /// Markdown after the closing `---` line, verbatim.
    pub body: String,
    /// 1-based line in `file` where the body starts (for locating references).
    pub body_line: usize,
}

impl Skill {
    pub fn name(&self) -> &str {
        &self.front.name
    }

    pub fn description(&self) -> &str {
        &self.front.description
    }

    /// The directory the skill lives in (`skills/product-qa`).
    pub fn dir(&self) -> &str {
        parent_of(&self.file)
    }

    /// The directory's own name, which `name` must equal.
    pub fn dir_name(&self) -> &str {
        let dir = self.dir();
        dir.rsplit('/').next().unwrap_or(dir)
    }

    pub fn parse(file: &str, text: &str) -> Result<Skill, Problem> {
        let (yaml, body, body_line) = split_front_matter(text).ok_or_else(|| {
            Problem::file(file, "missing YAML front matter: the file must start with a '---' line and close it with another")
                .at_line(Some(1))
        })?;
        let front: SkillFrontMatter = serde_yaml::from_str(yaml).map_err(|e| {
            let full = e.to_string();
            let mut message = full
                .rfind(" at line ")
                .map_or(full.as_str(), |i| &full[..i])
                .to_string();
            // +1: the YAML starts on the line after the opening '---'.
            let line = e.location().map(|l| l.line() + 1);
            let mut field = field_from_serde_message(&message);
            // serde_yaml prefixes errors inside a field with its path: "name: invalid type: …".
            if field.is_none() {
                if let Some((path, rest)) = message.split_once(": ") {
                    let is_path = path
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"_-.[]".contains(&b));
                    if is_path && !path.is_empty() {
                        field = Some(path.to_string());
                        message = rest.to_string();
                    }
                }
            }
            let field = field.map(|f| format!("front matter field '{f}'"));
            Problem {
                file: file.to_string(),
                line,
                field,
                message,
            }
        })?;
        Ok(Skill {
            file: file.to_string(),
            front,
            body: body.to_string(),
            body_line,
        })
    }

    /// `SKILL.md` text for this skill (the augmentation stage writes renamed or rewritten skills).
    pub fn to_markdown(&self) -> String {
        let yaml = serde_yaml::to_string(&self.front).expect("front matter always serializes");
        format!("---\n{yaml}---\n{}", self.body)
    }
}

/// Splits `---\n<yaml>\n---\n<body>`; CRLF line ends are accepted.
fn split_front_matter(text: &str) -> Option<(&str, &str, usize)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    let mut line_no = 2;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\r', '\n']) == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..], line_no + 1));
        }
        offset += line.len();
        line_no += 1;
    }
    None
}

/// Agent Skills name rule: 1–64 of `a-z0-9-`, no leading, trailing or doubled `-`.
pub fn is_valid_skill_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

pub const SKILL_NAME_RULE: &str =
    "must be 1-64 characters of a-z, 0-9 and '-', without leading, trailing or doubled '-'";

/// Reads every `<skills_dir>/<dir>/SKILL.md`, in directory-name order. A sub-directory without
/// `SKILL.md` is a problem; loose files directly in `skills_dir` (a README) are ignored.
pub fn load_skills(files: &FileSet, skills_dir: &str, problems: &mut Vec<Problem>) -> Vec<Skill> {
    let prefix = format!("{skills_dir}/");
    let mut dirs: BTreeMap<&str, bool> = BTreeMap::new();
    for key in files.keys() {
        if let Some((dir, rest)) = key.strip_prefix(&prefix).and_then(|r| r.split_once('/')) {
            *dirs.entry(dir).or_default() |= rest == SKILL_FILE;
        }
    }
    let mut skills = Vec::new();
    for (dir, has_skill_file) in dirs {
        let file = format!("{prefix}{dir}/{SKILL_FILE}");
        if !has_skill_file {
            problems.push(Problem::file(
                format!("{prefix}{dir}"),
                format!("skill directory has no {SKILL_FILE}"),
            ));
            continue;
        }
        match super::files::text(files, &file).and_then(|text| Skill::parse(&file, text)) {
            Ok(skill) => skills.push(skill),
            Err(p) => problems.push(p),
        }
    }
    skills
}

/// Front-matter rules and body references of one skill.
pub fn validate_skill(skill: &Skill, files: &FileSet, problems: &mut Vec<Problem>) {
    let file = &skill.file;
    let fm = |f: &str| format!("front matter field '{f}'");
    let name = skill.name();
    if !is_valid_skill_name(name) {
        problems.push(Problem::field(
            file,
            fm("name"),
            format!("{name:?} {SKILL_NAME_RULE}"),
        ));
    }
    if name != skill.dir_name() {
        problems.push(Problem::field(
            file,
            fm("name"),
            format!(
                "{name:?} must equal the skill's directory name {:?}",
                skill.dir_name()
            ),
        ));
    }
    let desc_chars = skill.description().chars().count();
    if skill.description().trim().is_empty() || desc_chars > MAX_DESCRIPTION_CHARS {
        problems.push(Problem::field(
            file,
            fm("description"),
            format!("must be 1-{MAX_DESCRIPTION_CHARS} characters saying what the skill does and when to use it (has {desc_chars})"),
        ));
    }
    if let Some(c) = &skill.front.compatibility {
        let n = c.chars().count();
        if n == 0 || n > MAX_COMPATIBILITY_CHARS {
            problems.push(Problem::field(
                file,
                fm("compatibility"),
                format!("must be 1-{MAX_COMPATIBILITY_CHARS} characters (has {n})"),
            ));
        }
    }
    if skill.body.trim().is_empty() {
        problems.push(Problem::field(
            file,
            "body",
            "is empty; a skill body holds its rules",
        ));
    }
    for (line, target) in relative_links(&skill.body) {
        let path = target.split('#').next().unwrap_or(target);
        let problem = match normalize_relative(skill.dir(), path) {
            Err(e) => Some(format!("reference {target:?}: {e}")),
            Ok(key)
                if !files.contains_key(&key)
                    && !files.keys().any(|k| k.starts_with(&format!("{key}/"))) =>
            {
                Some(format!(
                    "reference {target:?}: {}",
                    super::paths::PathError::NotFound
                ))
            }
            Ok(_) => None,
        };
        if let Some(message) = problem {
            problems
                .push(Problem::field(file, "body", message).at_line(Some(skill.body_line + line)));
        }
    }
}

/// Targets of Markdown links `[text](target)` that point into the file system (not URLs or
/// in-page anchors), with their 0-based line within `body`.
fn relative_links(body: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    for (i, line) in body.lines().enumerate() {
        let mut rest = line;
        while let Some(pos) = rest.find("](") {
            let after = &rest[pos + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].trim();
            let is_external = target.is_empty()
                || target.starts_with('#')
                || target.contains("://")
                || target.starts_with("mailto:");
            if !is_external {
                out.push((i, target));
            }
            rest = &after[end..];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skill_name_rule() {
        for ok in ["a", "product-qa", "x1-2y", &"a".repeat(64)] {
            assert!(is_valid_skill_name(ok), "{ok}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            "a--b",
            "Foo",
            "a_b",
            "中文",
            &"a".repeat(65),
        ] {
            assert!(!is_valid_skill_name(bad), "{bad}");
        }
    }

    #[test]
    fn parses_front_matter_with_crlf() {
        let s = Skill::parse(
            "skills/a/SKILL.md",
            "---\r\nname: a\r\ndescription: d\r\n---\r\nbody\r\n",
        )
        .unwrap();
        assert_eq!(s.name(), "a");
        assert_eq!(s.body, "body\r\n");
        assert_eq!(s.body_line, 5);
    }

    #[test]
    fn yaml_error_line_is_counted_in_the_file() {
        let p = Skill::parse(
            "skills/a/SKILL.md",
            "---\nname: a\ndescription: d\ncolour: red\n---\nb\n",
        )
        .unwrap_err();
        assert_eq!(p.line, Some(4));
        assert_eq!(p.field.as_deref(), Some("front matter field 'colour'"));
    }

    #[test]
    fn yaml_type_error_names_the_field() {
        let p = Skill::parse(
            "skills/a/SKILL.md",
            "---\nname: [a]\ndescription: d\n---\nb\n",
        )
        .unwrap_err();
        assert_eq!(p.line, Some(2));
        assert_eq!(p.field.as_deref(), Some("front matter field 'name'"));
        assert!(p.message.starts_with("invalid type"), "{p}");
    }

    #[test]
    fn markdown_round_trips() {
        let s = Skill::parse(
            "skills/a/SKILL.md",
            "---\nname: a\ndescription: 何时使用\nallowed-tools: x y\n---\n规则\n",
        )
        .unwrap();
        let again = Skill::parse("skills/a/SKILL.md", &s.to_markdown()).unwrap();
        assert_eq!(again, s);
        assert_eq!(again.front.allowed_tools.unwrap().names(), ["x", "y"]);
    }

    #[test]
    fn finds_relative_links_only() {
        let links = relative_links(
            "see [r](references/R.md) and [w](https://x.y) [a](#top)\n[b](../b/x.md#s)",
        );
        assert_eq!(links, [(0, "references/R.md"), (1, "../b/x.md#s")]);
    }
}
