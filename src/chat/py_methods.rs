//! Python `str` methods for chat templates, with Python's exact semantics.
//!
//! Templates call `.strip()`, `.split()`, `.startswith()` on message text. minijinja-contrib's
//! pycompat provides these, but a few differ from Python in ways that change output: `strip()`
//! uses Rust's whitespace set (Python's also has U+001C..U+001F), `split()` without a separator
//! uses minijinja's filter, `find` returns byte offsets, `count("")` never ends. Those are
//! reimplemented here; every other method goes to pycompat.

use minijinja::value::{Kwargs, Value, ValueKind};
use minijinja::{Error, ErrorKind, State};

/// `unknown_method_callback` for the chat environment.
pub fn call(state: &State, value: &Value, method: &str, args: &[Value]) -> Result<Value, Error> {
    if let Some(s) = value.as_str().filter(|_| value.kind() == ValueKind::String) {
        if let Some(rv) = string_method(s, method, args)? {
            return Ok(rv);
        }
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}

/// Python's `str.isspace()` for one character.
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Which end(s) `strip` works on.
#[derive(Clone, Copy)]
pub enum Side {
    Both,
    Start,
    End,
}

/// `str.strip([chars])` / `lstrip` / `rstrip`: whitespace when `chars` is None.
pub fn strip<'a>(s: &'a str, chars: Option<&str>, side: Side) -> &'a str {
    let pred = |c: char| match chars {
        Some(set) => set.contains(c),
        None => is_py_space(c),
    };
    match side {
        Side::Both => s.trim_matches(pred),
        Side::Start => s.trim_start_matches(pred),
        Side::End => s.trim_end_matches(pred),
    }
}

/// Positional arguments plus keyword arguments, as a template call passes them.
struct CallArgs<'a> {
    positional: &'a [Value],
    kwargs: Option<Kwargs>,
}

impl<'a> CallArgs<'a> {
    fn new(args: &'a [Value]) -> Result<Self, Error> {
        match args.split_last() {
            Some((last, rest)) if last.is_kwargs() => Ok(CallArgs {
                positional: rest,
                kwargs: Some(Kwargs::try_from(last.clone())?),
            }),
            _ => Ok(CallArgs {
                positional: args,
                kwargs: None,
            }),
        }
    }

    /// The argument at `index`, or the keyword `name`; Python's `None` counts as absent.
    fn get(&self, index: usize, name: &str) -> Result<Option<Value>, Error> {
        let v = match self.positional.get(index) {
            Some(v) => Some(v.clone()),
            None => match &self.kwargs {
                Some(kw) => kw.get::<Option<Value>>(name)?,
                None => None,
            },
        };
        Ok(v.filter(|v| !v.is_none() && !v.is_undefined()))
    }

    fn str_arg(&self, index: usize, name: &str) -> Result<Option<String>, Error> {
        match self.get(index, name)? {
            None => Ok(None),
            Some(v) => match v.as_str() {
                Some(s) if v.kind() == ValueKind::String => Ok(Some(s.to_string())),
                _ => Err(Error::new(
                    ErrorKind::InvalidOperation,
                    format!("argument {name} must be str or None, not {}", v.kind()),
                )),
            },
        }
    }

    fn int_arg(&self, index: usize, name: &str) -> Result<Option<i64>, Error> {
        match self.get(index, name)? {
            None => Ok(None),
            Some(v) => v.as_i64().map(Some).ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidOperation,
                    format!("argument {name} must be an integer, not {}", v.kind()),
                )
            }),
        }
    }

    /// Python raises on extra arguments; so do we rather than silently ignoring them.
    fn at_most(&self, n: usize, method: &str) -> Result<(), Error> {
        if self.positional.len() > n {
            return Err(Error::new(
                ErrorKind::TooManyArguments,
                format!("str.{method}() takes at most {n} arguments"),
            ));
        }
        if let Some(kw) = &self.kwargs {
            kw.assert_all_used()?;
        }
        Ok(())
    }
}

fn string_method(s: &str, method: &str, args: &[Value]) -> Result<Option<Value>, Error> {
    let a = CallArgs::new(args)?;
    let rv = match method {
        "strip" | "lstrip" | "rstrip" => {
            let chars = a.str_arg(0, "chars")?;
            a.at_most(1, method)?;
            let side = match method {
                "strip" => Side::Both,
                "lstrip" => Side::Start,
                _ => Side::End,
            };
            Value::from(strip(s, chars.as_deref(), side))
        }
        "split" | "rsplit" => {
            let sep = a.str_arg(0, "sep")?;
            let maxsplit = a.int_arg(1, "maxsplit")?.unwrap_or(-1);
            a.at_most(2, method)?;
            let parts = split(s, sep.as_deref(), maxsplit, method == "rsplit")?;
            Value::from(parts)
        }
        "find" | "rfind" => {
            let sub = a.str_arg(0, "sub")?.unwrap_or_default();
            a.at_most(1, method)?;
            let pos = if method == "find" {
                s.find(sub.as_str())
            } else {
                s.rfind(sub.as_str())
            };
            // Python indexes by code point, not byte.
            Value::from(pos.map_or(-1, |b| s[..b].chars().count() as i64))
        }
        "count" => {
            let sub = a.str_arg(0, "sub")?.unwrap_or_default();
            a.at_most(1, method)?;
            let n = if sub.is_empty() {
                s.chars().count() + 1
            } else {
                s.matches(sub.as_str()).count()
            };
            Value::from(n)
        }
        "removeprefix" | "removesuffix" => {
            let affix = a.str_arg(0, "affix")?.unwrap_or_default();
            a.at_most(1, method)?;
            let out = if method == "removeprefix" {
                s.strip_prefix(affix.as_str())
            } else {
                s.strip_suffix(affix.as_str())
            };
            Value::from(out.unwrap_or(s))
        }
        _ => return Ok(None),
    };
    Ok(Some(rv))
}

/// `str.split` / `str.rsplit` with Python's rules: no separator splits on whitespace runs and
/// drops empty pieces; an empty separator is an error; `maxsplit < 0` means no limit.
fn split(
    s: &str,
    sep: Option<&str>,
    maxsplit: i64,
    from_right: bool,
) -> Result<Vec<String>, Error> {
    let limit = usize::try_from(maxsplit).ok();
    match sep {
        Some("") => Err(Error::new(ErrorKind::InvalidOperation, "empty separator")),
        Some(sep) => {
            let parts: Vec<String> = match (limit, from_right) {
                (None, _) => s.split(sep).map(str::to_string).collect(),
                (Some(n), false) => s.splitn(n + 1, sep).map(str::to_string).collect(),
                (Some(n), true) => {
                    let mut v: Vec<String> = s.rsplitn(n + 1, sep).map(str::to_string).collect();
                    v.reverse();
                    v
                }
            };
            Ok(parts)
        }
        None if !from_right => {
            let mut out = Vec::new();
            let mut rest = s.trim_start_matches(is_py_space);
            while !rest.is_empty() {
                if limit == Some(out.len()) {
                    out.push(rest.to_string());
                    break;
                }
                match rest.find(is_py_space) {
                    Some(i) => {
                        out.push(rest[..i].to_string());
                        rest = rest[i..].trim_start_matches(is_py_space);
                    }
                    None => {
                        out.push(rest.to_string());
                        break;
                    }
                }
            }
            Ok(out)
        }
        None => {
            let mut out = Vec::new();
            let mut rest = s.trim_end_matches(is_py_space);
            while !rest.is_empty() {
                if limit == Some(out.len()) {
                    out.push(rest.to_string());
                    break;
                }
                match rest.rfind(is_py_space) {
                    Some(i) => {
                        let ws_len = rest[i..].chars().next().map_or(1, char::len_utf8);
                        out.push(rest[i + ws_len..].to_string());
                        rest = rest[..i].trim_end_matches(is_py_space);
                    }
                    None => {
                        out.push(rest.to_string());
                        break;
                    }
                }
            }
            out.reverse();
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sp(s: &str, sep: Option<&str>, n: i64, right: bool) -> Vec<String> {
        split(s, sep, n, right).unwrap()
    }

    #[test]
    fn split_matches_python() {
        assert_eq!(sp("  a b\t\u{1f}c  ", None, -1, false), ["a", "b", "c"]);
        assert_eq!(sp("  a b  c  ", None, 1, false), ["a", "b  c  "]);
        assert_eq!(sp("  a b  c  ", None, 1, true), ["  a b", "c"]);
        assert_eq!(
            sp("a</think>b</think>c", Some("</think>"), -1, false),
            ["a", "b", "c"]
        );
        assert_eq!(sp("a,b,c", Some(","), 1, true), ["a,b", "c"]);
        assert_eq!(sp("", Some(","), -1, false), [""]);
        assert!(sp("", None, -1, false).is_empty());
        assert!(split("x", Some(""), -1, false).is_err());
    }

    #[test]
    fn strip_uses_python_whitespace() {
        assert_eq!(strip("\u{1c} x \n", None, Side::Both), "x");
        assert_eq!(strip("\n\nx\n", Some("\n"), Side::Start), "x\n");
        assert_eq!(strip("xyx", Some("x"), Side::End), "xy");
    }

    #[test]
    fn find_and_count_use_code_points() {
        let call = |m: &str, args: &[Value]| string_method("价格😀abc", m, args).unwrap().unwrap();
        assert_eq!(call("find", &[Value::from("abc")]), Value::from(3));
        assert_eq!(call("rfind", &[Value::from("zz")]), Value::from(-1));
        assert_eq!(call("count", &[Value::from("")]), Value::from(7));
    }
}
