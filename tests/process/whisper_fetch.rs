//! Fetching into an empty models directory downloads, verifies and assembles the pinned files;
//! a second fetch finds them in place.

use crate::common::TempDir;
use voiced::models::whisper;

#[test]
fn fetch_into_an_empty_dir_is_complete_and_idempotent() {
    let dir = TempDir::new("whisper-fetch", 0o755);
    let model = whisper::WhisperModel::TinyEn;
    assert!(!model.dir(dir.path()).exists(), "starts empty");
    let first = whisper::fetch(dir.path(), model).unwrap();
    for file in [
        "model.bin",
        "tokenizer.json",
        "config.json",
        "vocabulary.txt",
    ] {
        let path = first.join(file);
        assert!(
            path.metadata().is_ok_and(|m| m.len() > 0),
            "{model:?} lacks {file}"
        );
    }
    let modified = first
        .join("model.bin")
        .metadata()
        .unwrap()
        .modified()
        .unwrap();
    let again = whisper::fetch(dir.path(), model).unwrap();
    assert_eq!(first, again);
    assert_eq!(
        again
            .join("model.bin")
            .metadata()
            .unwrap()
            .modified()
            .unwrap(),
        modified,
        "the second fetch leaves the files in place"
    );
    assert_eq!(whisper::WhisperModel::from_name(model.name()), Some(model));
}
