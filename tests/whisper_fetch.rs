//! Fetching is idempotent and yields the pinned files.

use voiced::models::{default_models_dir, whisper};

#[test]
fn fetch_is_idempotent_and_complete() {
    let dir = default_models_dir();
    for model in [whisper::WhisperModel::Base, whisper::WhisperModel::TinyEn] {
        let first = whisper::fetch(&dir, model).unwrap();
        let again = whisper::fetch(&dir, model).unwrap();
        assert_eq!(first, again);
        for file in [
            "model.bin",
            "tokenizer.json",
            "config.json",
            "vocabulary.txt",
        ] {
            assert!(first.join(file).is_file(), "{model:?} lacks {file}");
        }
        assert_eq!(whisper::WhisperModel::from_name(model.name()), Some(model));
    }
}
