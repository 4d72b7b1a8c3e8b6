//! Streaming JSONL I/O shared by every tool.
//!
//! * Input is a file or `-` (stdin); output a file or `-` (stdout). A file output is written to a temporary
//!   name beside it and renamed into place by [`JsonlWriter::finish`], so an interrupted run never leaves a
//!   half-written file that looks complete.
//! * Lines are read as bytes, so a line of tens of MB is fine and invalid UTF-8 is an error *for that line*,
//!   never a panic. A leading UTF-8 BOM, CRLF line ends and blank lines are tolerated.
//! * A bad line either stops the run (`--on-error fail`, the default) with `file:line:column`, the parser's
//!   message and a snippet, or is skipped (`--on-error skip`); with `--rejects R` each bad line is copied to R
//!   verbatim and its reason goes to `R.reasons.jsonl`, one JSON object per line in the same order. Good
//!   records keep their order and none is dropped.
//! * `--shard K/N` keeps the records whose id hashes to K modulo N, a split that is the same on every
//!   machine and for every input order, so a stage runs unchanged as an array job.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{bail, Context, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// What to do with a line that does not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OnError {
    /// Stop at the first bad line, naming file, line and column.
    #[default]
    Fail,
    /// Skip bad lines (into `--rejects` when given) and go on.
    Skip,
}

/// The flags every JSONL stage shares; `#[command(flatten)]` them into a tool's arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct JsonlArgs {
    /// Input JSONL file, or `-` for stdin.
    #[arg(short, long, default_value = "-", value_name = "FILE")]
    pub input: String,
    /// Output JSONL file, or `-` for stdout. A file appears only when the run completes.
    #[arg(short, long, default_value = "-", value_name = "FILE")]
    pub output: String,
    /// What to do with a line that is not a valid record.
    #[arg(long, value_enum, default_value_t = OnError::Fail)]
    pub on_error: OnError,
    /// With `--on-error skip`: copy each bad line here verbatim (reasons go to FILE.reasons.jsonl).
    #[arg(long, value_name = "FILE")]
    pub rejects: Option<PathBuf>,
    /// Process only shard K of N (0-based), split by a stable hash of the record id.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<Shard>,
}

impl JsonlArgs {
    /// Open the input as a stream of records of type `T` with these flags' policy.
    pub fn records<T: DeserializeOwned + Keyed>(&self) -> Result<Records<T>> {
        if self.rejects.is_some() && self.on_error == OnError::Fail {
            bail!("--rejects needs --on-error skip (with fail, the first bad line stops the run)");
        }
        let mut stream = Records::new(LineReader::open(&self.input)?, self.on_error);
        if let Some(path) = &self.rejects {
            stream = stream.with_rejects(Rejects::create(path)?);
        }
        if let Some(shard) = self.shard {
            stream = stream.with_shard(shard);
        }
        Ok(stream)
    }

    /// Open the output.
    pub fn writer(&self) -> Result<JsonlWriter> {
        JsonlWriter::create(&self.output)
    }
}

/// One shard of a deterministic split: records whose id hashes to `index` modulo `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// Whether a record with this id belongs to this shard. FNV-1a is used because it is tiny, fast and
    /// defined byte for byte, so the split is the same on every machine and in every language.
    pub fn contains(&self, id: &str) -> bool {
        fnv1a64(id.as_bytes()) % self.count == self.index
    }
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let err = || format!("invalid shard '{s}': expected K/N with 0 <= K < N, e.g. 0/4");
        let (k, n) = s.split_once('/').ok_or_else(err)?;
        let index: u64 = k.trim().parse().map_err(|_| err())?;
        let count: u64 = n.trim().parse().map_err(|_| err())?;
        if count == 0 || index >= count {
            return Err(err());
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// 64-bit FNV-1a.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Records that have an id to shard by.
pub trait Keyed {
    fn key(&self) -> Option<&str>;
}

impl Keyed for crate::record::Trajectory {
    fn key(&self) -> Option<&str> {
        Some(&self.id)
    }
}

impl Keyed for serde_json::Value {
    fn key(&self) -> Option<&str> {
        self.get("id").and_then(serde_json::Value::as_str)
    }
}

/// One physical line of input, without its line end.
#[derive(Debug)]
pub struct RawLine {
    /// 1-based line number in the source.
    pub number: u64,
    pub bytes: Vec<u8>,
}

/// Reads a JSONL source line by line as bytes, skipping blank lines.
pub struct LineReader {
    name: String,
    inner: Box<dyn BufRead + Send>,
    line: u64,
}

impl LineReader {
    /// Open a file, or stdin for `-`.
    pub fn open(path: &str) -> Result<LineReader> {
        if path == "-" {
            return Ok(LineReader::from_reader("<stdin>", io::stdin()));
        }
        let file = File::open(path).with_context(|| format!("cannot open input '{path}'"))?;
        Ok(LineReader::from_reader(path, file))
    }

    /// Read from any byte source; `name` is what errors call it.
    pub fn from_reader(name: &str, reader: impl Read + Send + 'static) -> LineReader {
        LineReader {
            name: name.to_string(),
            inner: Box::new(BufReader::with_capacity(1 << 20, reader)),
            line: 0,
        }
    }

    /// The name errors use for this source.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The next non-blank line, or `None` at the end. An I/O error is returned, not swallowed.
    pub fn next_line(&mut self) -> Option<Result<RawLine>> {
        loop {
            let mut bytes = Vec::new();
            match self.inner.read_until(b'\n', &mut bytes) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => {
                    let err = anyhow::Error::new(e).context(format!(
                        "{}:{}: read error",
                        self.name,
                        self.line + 1
                    ));
                    return Some(Err(err));
                }
            }
            self.line += 1;
            if bytes.last() == Some(&b'\n') {
                bytes.pop();
            }
            if bytes.last() == Some(&b'\r') {
                bytes.pop();
            }
            if self.line == 1 && bytes.starts_with(b"\xEF\xBB\xBF") {
                bytes.drain(..3);
            }
            if bytes.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Some(Ok(RawLine {
                number: self.line,
                bytes,
            }));
        }
    }
}

/// Why a line was rejected: where, and what is wrong.
#[derive(Debug, Clone)]
pub struct LineError {
    pub file: String,
    pub line: u64,
    /// 1-based column (in characters) when the parser knows it.
    pub column: Option<usize>,
    pub message: String,
    /// Up to ~60 characters around the error.
    pub snippet: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)?;
        if let Some(col) = self.column {
            write!(f, ":{col}")?;
        }
        write!(f, ": {}", self.message)?;
        if !self.snippet.is_empty() {
            write!(f, "\n    near: {}", self.snippet)?;
        }
        Ok(())
    }
}

impl std::error::Error for LineError {}

/// Parse one line as a `T`, or say exactly where and why it is not one.
pub fn parse_line<T: DeserializeOwned>(file: &str, line: &RawLine) -> Result<T, LineError> {
    let text = match std::str::from_utf8(&line.bytes) {
        Ok(text) => text,
        Err(e) => {
            let valid = &line.bytes[..e.valid_up_to()];
            let column = String::from_utf8_lossy(valid).chars().count() + 1;
            return Err(LineError {
                file: file.to_string(),
                line: line.number,
                column: Some(column),
                message: format!("invalid UTF-8 at byte {}", e.valid_up_to()),
                snippet: snippet(&String::from_utf8_lossy(&line.bytes), column),
            });
        }
    };
    serde_json::from_str(text).map_err(|e| {
        // serde_json counts columns in bytes on the line; report characters, which is what editors show.
        let byte_col = e.column().max(1);
        let column = text
            .get(..byte_col.min(text.len()))
            .map_or(byte_col, |s| s.chars().count());
        LineError {
            file: file.to_string(),
            line: line.number,
            column: Some(column),
            message: strip_position(&e.to_string()),
            snippet: snippet(text, column),
        }
    })
}

/// serde_json appends " at line 1 column N"; we print our own file:line:column instead.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

fn snippet(text: &str, column: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = column.saturating_sub(1).min(chars.len());
    let start = at.saturating_sub(30);
    let end = (at + 30).min(chars.len());
    let mut out: String = chars[start..end].iter().collect();
    if start > 0 {
        out.insert_str(0, "…");
    }
    if end < chars.len() {
        out.push('…');
    }
    out
}

/// Where rejected lines go: the bytes verbatim to one file, the reasons to `<file>.reasons.jsonl`.
pub struct Rejects {
    lines: BufWriter<File>,
    reasons: BufWriter<File>,
}

impl Rejects {
    pub fn create(path: &Path) -> Result<Rejects> {
        let open = |p: &Path| {
            File::create(p)
                .map(BufWriter::new)
                .with_context(|| format!("cannot create rejects file '{}'", p.display()))
        };
        let mut reasons_path = path.as_os_str().to_owned();
        reasons_path.push(".reasons.jsonl");
        Ok(Rejects {
            lines: open(path)?,
            reasons: open(Path::new(&reasons_path))?,
        })
    }

    fn write(&mut self, line: &RawLine, err: &LineError) -> Result<()> {
        self.lines.write_all(&line.bytes)?;
        self.lines.write_all(b"\n")?;
        let reason = serde_json::json!({
            "file": err.file, "line": err.line, "column": err.column, "error": err.message,
        });
        serde_json::to_writer(&mut self.reasons, &reason)?;
        self.reasons.write_all(b"\n")?;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.lines.flush()?;
        self.reasons.flush()?;
        Ok(())
    }
}

/// Counts of what a stream did, for the summary a tool prints at the end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StreamStats {
    pub read: u64,
    pub rejected: u64,
    pub out_of_shard: u64,
    pub bytes: u64,
}

/// A stream of parsed records with an error policy, optional rejects file and shard filter.
pub struct Records<T> {
    reader: LineReader,
    on_error: OnError,
    rejects: Option<Rejects>,
    shard: Option<Shard>,
    stats: StreamStats,
    failed: bool,
    _marker: PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned + Keyed> Records<T> {
    pub fn new(reader: LineReader, on_error: OnError) -> Records<T> {
        Records {
            reader,
            on_error,
            rejects: None,
            shard: None,
            stats: StreamStats::default(),
            failed: false,
            _marker: PhantomData,
        }
    }

    pub fn with_rejects(mut self, rejects: Rejects) -> Self {
        self.rejects = Some(rejects);
        self
    }

    pub fn with_shard(mut self, shard: Shard) -> Self {
        self.shard = Some(shard);
        self
    }

    pub fn stats(&self) -> StreamStats {
        self.stats
    }

    /// The name of the source, for messages.
    pub fn source(&self) -> &str {
        self.reader.name()
    }

    /// Record a line that parsed but is not acceptable to the stage (a missing tool, say): under `fail` this
    /// is an error to return, under `skip` the line goes to the rejects file. The stage keeps the line's
    /// number from [`Records::next_numbered`].
    pub fn reject(&mut self, line: &RawLine, reason: impl fmt::Display) -> Result<()> {
        let err = LineError {
            file: self.reader.name().to_string(),
            line: line.number,
            column: None,
            message: reason.to_string(),
            snippet: String::new(),
        };
        self.handle_bad_line(line, err)
    }

    /// The next record together with its raw line (for stages that may reject it later).
    pub fn next_numbered(&mut self) -> Option<Result<(RawLine, T)>> {
        if self.failed {
            return None;
        }
        loop {
            let line = match self.reader.next_line()? {
                Ok(line) => line,
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            };
            self.stats.bytes += line.bytes.len() as u64 + 1;
            match parse_line::<T>(self.reader.name(), &line) {
                Ok(record) => {
                    if let Some(shard) = self.shard {
                        let in_shard = match record.key() {
                            Some(id) => shard.contains(id),
                            None => shard.contains(&String::from_utf8_lossy(&line.bytes)),
                        };
                        if !in_shard {
                            self.stats.out_of_shard += 1;
                            continue;
                        }
                    }
                    self.stats.read += 1;
                    return Some(Ok((line, record)));
                }
                Err(err) => {
                    if let Err(e) = self.handle_bad_line(&line, err) {
                        self.failed = true;
                        return Some(Err(e));
                    }
                }
            }
        }
    }

    fn handle_bad_line(&mut self, line: &RawLine, err: LineError) -> Result<()> {
        match self.on_error {
            OnError::Fail => Err(anyhow::Error::new(err).context(
                "invalid record (use --on-error skip --rejects FILE to set bad lines aside and go on)",
            )),
            OnError::Skip => {
                self.stats.rejected += 1;
                if let Some(rejects) = &mut self.rejects {
                    rejects.write(line, &err)?;
                    rejects.flush()?;
                }
                Ok(())
            }
        }
    }
}

impl<T: DeserializeOwned + Keyed> Iterator for Records<T> {
    type Item = Result<T>;
    fn next(&mut self) -> Option<Result<T>> {
        self.next_numbered().map(|r| r.map(|(_, record)| record))
    }
}

/// Writes one JSON value per line to stdout or to a file that appears atomically on [`finish`].
///
/// [`finish`]: JsonlWriter::finish
pub struct JsonlWriter {
    out: BufWriter<Box<dyn Write + Send>>,
    /// (temporary path, final path) for file outputs.
    rename: Option<(PathBuf, PathBuf)>,
    buf: Vec<u8>,
}

impl JsonlWriter {
    /// Create a writer for a file path, or stdout for `-`.
    pub fn create(path: &str) -> Result<JsonlWriter> {
        if path == "-" {
            return Ok(JsonlWriter::from_writer(io::stdout()));
        }
        let target = PathBuf::from(path);
        let tmp = temp_path_for(&target);
        let file = File::create(&tmp)
            .with_context(|| format!("cannot create output '{}'", tmp.display()))?;
        let mut writer = JsonlWriter::from_writer(file);
        writer.rename = Some((tmp, target));
        Ok(writer)
    }

    pub fn from_writer(w: impl Write + Send + 'static) -> JsonlWriter {
        JsonlWriter {
            out: BufWriter::with_capacity(1 << 20, Box::new(w)),
            rename: None,
            buf: Vec::new(),
        }
    }

    /// Serialise one record as a line.
    pub fn write<T: Serialize + ?Sized>(&mut self, record: &T) -> Result<()> {
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, record).context("cannot serialise record")?;
        self.buf.push(b'\n');
        self.out.write_all(&self.buf).context("cannot write output")
    }

    /// Write a line that is already serialised (pass-through without re-encoding).
    pub fn write_raw(&mut self, line: &[u8]) -> Result<()> {
        self.out.write_all(line)?;
        self.out.write_all(b"\n").context("cannot write output")
    }

    /// Flush, and move a file output into place.
    pub fn finish(mut self) -> Result<()> {
        self.out.flush().context("cannot flush output")?;
        if let Some((tmp, target)) = self.rename.take() {
            std::fs::rename(&tmp, &target).with_context(|| {
                format!(
                    "cannot move '{}' into place as '{}'",
                    tmp.display(),
                    target.display()
                )
            })?;
        }
        Ok(())
    }
}

impl Drop for JsonlWriter {
    fn drop(&mut self) {
        // A writer dropped without finish() is an aborted run: leave no partial file behind.
        if let Some((tmp, _)) = self.rename.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// A temporary file name in the same directory (so the final rename is atomic on one file system).
pub fn temp_path_for(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Write `records` as a JSONL file (moved into place when complete) or to stdout for `-`.
pub fn write_all<T: Serialize>(path: &str, records: &[T]) -> Result<()> {
    let mut w = JsonlWriter::create(path)?;
    for r in records {
        w.write(r)?;
    }
    w.finish()
}

/// Read a whole JSONL file (or stdin) into memory, failing on the first bad line. For small inputs.
pub fn read_all<T: DeserializeOwned + Keyed>(path: &str) -> Result<Vec<T>> {
    Records::new(LineReader::open(path)?, OnError::Fail).collect()
}
