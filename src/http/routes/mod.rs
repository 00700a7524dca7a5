pub mod audio;
pub mod generations;
pub mod health;
pub mod openai_speech;
pub mod reads;
pub mod speech;
pub mod transcriptions;
pub mod voices;
