//! Encoding audio while it is being produced: each piece of engine output becomes bytes that can
//! be sent at once, and the concatenation of every piece's bytes is the file.
//!
//! - One piece in all (the first push is also the last): exactly the bytes of [`encode`].
//! - Several pieces:
//!   - wav: the 44-byte header with the streaming placeholder `0xFFFFFFFF` in both size fields
//!     (what OpenAI streams; the length is unknown when the header is sent), then 16-bit PCM.
//!   - mp3: one LAME encoder across the pieces, each push returning the frames it completed; no
//!     LAME/Info tag (its frame comes first and its content is only known at the end), so
//!     decoders play LAME's encoder delay (about 50 ms of silence) and the final padding.
//!   - Ogg Opus: one logical stream (serial from the first piece's samples), each push ending its
//!     page; the last page's granule trims the padding as usual.
//!
//! Either way the bytes are a function of the samples and of where the pieces end, so the same
//! pieces always give the same file.

use super::AudioFormat;
use super::encode::{
    EncodeError, encode, mp3_encoder, mp3_flush, mp3_frames, pcm16, sanitize, wav_header,
};
use super::ogg_opus::{OpusStream, is_opus_rate};

/// Encodes one audio stream piece by piece (see the module docs).
pub struct StreamEncoder {
    format: AudioFormat,
    sample_rate: u32,
    state: State,
}

enum State {
    /// Nothing pushed yet: whether the audio is one piece is known at the first push.
    Fresh,
    Wav,
    Mp3(Box<mp3lame_encoder::Encoder>),
    Opus(Box<OpusStream>),
    /// A rate libopus does not take: resampled and encoded in one go at the end.
    Buffered(Vec<f32>),
    Done,
}

impl StreamEncoder {
    pub fn new(format: AudioFormat, sample_rate: u32) -> Result<Self, EncodeError> {
        if sample_rate == 0 {
            return Err(EncodeError::UnsupportedSampleRate(sample_rate));
        }
        Ok(Self {
            format,
            sample_rate,
            state: State::Fresh,
        })
    }

    pub fn format(&self) -> AudioFormat {
        self.format
    }

    /// Encodes the next piece (mono, in [-1, 1]); `last` says nothing follows. Returns the
    /// bytes to send now (possibly none, e.g. mp3 frames LAME still holds).
    ///
    /// # Panics
    /// When called again after a push with `last`.
    pub fn push(&mut self, samples: &[f32], last: bool) -> Result<Vec<u8>, EncodeError> {
        let rate = self.sample_rate;
        let mut out = Vec::new();
        if let State::Fresh = self.state {
            if last {
                self.state = State::Done;
                return encode(samples, rate, self.format);
            }
            self.state = match self.format {
                AudioFormat::Wav => {
                    wav_header(&mut out, rate, None);
                    State::Wav
                }
                AudioFormat::Mp3 => State::Mp3(Box::new(mp3_encoder(rate, false)?)),
                AudioFormat::Opus if is_opus_rate(rate) => {
                    State::Opus(Box::new(OpusStream::new(rate, rate)?))
                }
                AudioFormat::Opus => State::Buffered(Vec::new()),
            };
        }
        match &mut self.state {
            State::Fresh => unreachable!("set above"),
            State::Done => panic!("push after the last piece"),
            State::Wav => pcm16(&mut out, samples),
            State::Mp3(encoder) => {
                mp3_frames(encoder, samples, &mut out)?;
                if last {
                    mp3_flush(encoder, &mut out)?;
                }
            }
            State::Opus(stream) => {
                let clean: Vec<f32> = samples.iter().map(|&s| sanitize(s)).collect();
                out = stream.push(&clean, last)?;
            }
            State::Buffered(all) => {
                all.extend_from_slice(samples);
                if last {
                    out = encode(all, rate, self.format)?;
                }
            }
        }
        if last {
            self.state = State::Done;
        }
        Ok(out)
    }
}
