//! The committed fuzz corpus as regression tests on stable: every file under
//! `testdata/fuzz/<target>/` goes through the same property libFuzzer checks (`hat::fuzz`), so an
//! input that once broke a parser, and the inputs that cover what the fuzzer reached, stay checked
//! in CI, which has no nightly and no libFuzzer (docs/fuzzing.md).

use std::path::Path;

#[test]
fn every_committed_fuzz_input_holds_its_property() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fuzz");
    for (target, check) in hat::fuzz::TARGETS {
        let dir = root.join(target);
        let mut inputs: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.unwrap().path())
            .collect();
        inputs.sort();
        assert!(!inputs.is_empty(), "{}: no corpus", dir.display());
        for input in inputs {
            let data = std::fs::read(&input).unwrap();
            // Named first, so a failing property's panic follows the input that made it.
            eprintln!("{}", input.display());
            check(&data);
        }
    }
}

#[test]
fn every_target_has_a_corpus_and_a_libfuzzer_binary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (target, _) in hat::fuzz::TARGETS {
        let binary = root.join(format!("fuzz/fuzz_targets/{target}.rs"));
        assert!(binary.is_file(), "{} is missing", binary.display());
        assert!(
            root.join("testdata/fuzz").join(target).is_dir(),
            "no corpus for {target}"
        );
    }
}
