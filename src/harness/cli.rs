//! `hat harness …`: the inspection commands, as library functions so the binary stays a thin
//! dispatcher. Output goes to the given writers; the return value is the process exit code.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Subcommand;

use super::{check_dir, Harness, LiveContext};

/// Subcommands of `hat harness`.
#[derive(Debug, Subcommand)]
pub enum HarnessCommand {
    /// Check a harness directory against every rule and print each problem.
    ///
    /// Checks: harness.toml fields and limit ranges; the [serves] table (canonical ids exist, every
    /// mapped tool and skill exists, no name serves two ids, every canonical tool is served or lacked); skill names (1-64 of a-z 0-9 -, equal to the
    /// directory) and descriptions (1-1024 chars); tool names (unique, ^[a-zA-Z0-9_-]{1,64}$) and
    /// object input schemas; hook events, matchers (must match a real tool), command files,
    /// timeouts and built-in check parameters; prompt templates compile and render; and no path
    /// (include, skill reference, hook command, harness.toml path, symlink) leaves the directory.
    ///
    /// Exit status: 0 when valid (a one-line summary on stdout), 1 when there are problems (one
    /// line per problem on stderr: FILE[:LINE]: field 'FIELD': MESSAGE).
    Validate {
        /// Harness directory (containing harness.toml).
        dir: PathBuf,
    },
    /// Write a starting harness into DIR (new or empty): one tool, one inline skill, a prompt
    /// pipeline and the [serves] table, valid as written and ready for `hat sim tasks --harness DIR`.
    /// docs/own-harness.md goes from there to `make run HARNESS=DIR`.
    Init {
        /// Directory to create (or an empty one).
        dir: PathBuf,
    },
    /// Print the system prompt the harness renders for a live-room context.
    ///
    /// Blocks are rendered in prompts/pipeline.toml order; those with `placement = "context"` go
    /// into the context message (a user message after the system prompt), printed after it. Without --context, a live room with no
    /// product on screen and no extra rules is used. Like tools and hash, exits 2 with the list of
    /// structural problems if the harness does not load.
    ///
    /// Example: hat harness render harness-samples/taolive --context
    /// testdata/harness/taolive-context.json --blocks
    Render {
        /// Harness directory (containing harness.toml).
        dir: PathBuf,
        /// Live-room context: a JSON object with product, room, active_rules, … ("-" = stdin).
        #[arg(long, value_name = "FILE")]
        context: Option<PathBuf>,
        /// Print each block under a "=== name ===" header instead of the joined prompt.
        #[arg(long)]
        blocks: bool,
    },
    /// Print the tools as OpenAI function specs (a JSON array), in canonical order.
    Tools {
        /// Harness directory (containing harness.toml).
        dir: PathBuf,
    },
    /// Print the content hash ("sha256:<hex>") recorded in trajectories and eval records.
    ///
    /// The hash covers every file except dot-files, in path order, with CRLF normalized to LF;
    /// it is the same on any machine and for any file creation order.
    Hash {
        /// Harness directory (containing harness.toml).
        dir: PathBuf,
    },
}

/// Runs one `hat harness` subcommand. I/O errors and unloadable harnesses are `Err`;
/// an invalid harness under `validate` is exit code 1 with the problems on `err`.
pub fn run(cmd: &HarnessCommand, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32> {
    match cmd {
        HarnessCommand::Validate { dir } => {
            let problems = check_dir(dir);
            if problems.is_empty() {
                let h = Harness::load(dir)?;
                writeln!(
                    out,
                    "ok: {} {} ({} tools, {} skills, {} hooks, {} prompt blocks) {}",
                    h.name(),
                    h.version(),
                    h.tools().len(),
                    h.skills().len(),
                    h.hooks().iter().count(),
                    h.pipeline().blocks.len(),
                    h.hash()
                )?;
                return Ok(0);
            }
            for p in &problems {
                writeln!(err, "{p}")?;
            }
            writeln!(err, "{}: {} problem(s)", dir.display(), problems.len())?;
            Ok(1)
        }
        HarnessCommand::Init { dir } => {
            let name = super::init::init(dir)?;
            let problems = check_dir(dir);
            if !problems.is_empty() {
                // The skeleton is ours: a problem here is a bug in it, not in anything the user wrote.
                for p in &problems {
                    writeln!(err, "{p}")?;
                }
                return Ok(1);
            }
            writeln!(
                out,
                "wrote harness {name} to {0}; next: hat harness validate {0}, then docs/own-harness.md",
                dir.display()
            )?;
            Ok(0)
        }
        HarnessCommand::Render {
            dir,
            context,
            blocks,
        } => {
            let h = Harness::load(dir)?;
            let ctx = match context {
                None => LiveContext::default_context(),
                Some(path) => {
                    let text = if path.as_os_str() == "-" {
                        std::io::read_to_string(std::io::stdin())
                            .context("reading the context from stdin")?
                    } else {
                        std::fs::read_to_string(path)
                            .with_context(|| format!("reading {}", path.display()))?
                    };
                    LiveContext::from_json_text(&path.display().to_string(), &text)?
                }
            };
            if *blocks {
                for b in h.render_blocks(&ctx)? {
                    let placed = if b.placement.is_system() {
                        ""
                    } else {
                        " (context message)"
                    };
                    writeln!(out, "=== {}{placed} ===\n{}\n", b.name, b.text)?;
                }
            } else {
                let prompt = h.render_prompt(&ctx)?;
                writeln!(out, "{}", prompt.system)?;
                if let Some(context) = prompt.context {
                    writeln!(out, "\n=== context message (user) ===\n{context}")?;
                }
            }
            Ok(0)
        }
        HarnessCommand::Tools { dir } => {
            let h = Harness::load(dir)?;
            writeln!(out, "{}", serde_json::to_string_pretty(&h.openai_tools())?)?;
            Ok(0)
        }
        HarnessCommand::Hash { dir } => {
            writeln!(out, "{}", Harness::load(dir)?.hash())?;
            Ok(0)
        }
    }
}
