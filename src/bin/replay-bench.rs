//! `replay-bench`: replay deployment requests against an OpenAI-compatible endpoint (see `hat::replay`).

fn main() -> std::process::ExitCode {
    hat::replay::cli::main()
}
