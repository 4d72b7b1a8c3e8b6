//! `serve`: OpenAI-compatible HTTP server with continuous batching and agent mode (see `hat::serve`).

fn main() -> std::process::ExitCode {
    hat::serve::cli::main()
}
