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
//!
//! What was streamed is playable but not always a finished file: once the last piece is pushed,
//! [`StreamEncoder::finish`] turns the concatenation of the pushes into one. wav gets its exact
//! RIFF and data sizes (the two placeholders overwritten); mp3 gets LAME's own Info tag frame
//! (frame count, encoder delay and padding, CRCs: the gapless length) put in front of the
//! streamed frames. The encoder runs with the tag enabled from the start and drops the empty
//! frame LAME reserves for it from the stream, so the streamed frames are the same bytes as
//! without a tag, and the finished file is exactly the one-shot layout (tag frame, then frames).
//! Ogg Opus needs nothing: its last page already ends the stream.

use super::AudioFormat;
use super::encode::{
    EncodeError, WAV_HEADER, encode, mp3_encoder, mp3_flush, mp3_frames, pcm16, sanitize,
    wav_header,
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
    Mp3 {
        encoder: Box<mp3lame_encoder::Encoder>,
        /// Bytes LAME returned before the size of the frame it reserves for its tag was known.
        held: Vec<u8>,
        /// Bytes of that reserved frame dropped so far from the stream.
        dropped: usize,
    },
    Opus(Box<OpusStream>),
    /// A rate libopus does not take: resampled and encoded in one go at the end.
    Buffered(Vec<f32>),
    /// The last piece was pushed; what the streamed bytes still need to be a finished file.
    Done(Finish),
}

/// What [`StreamEncoder::finish`] does to the streamed bytes.
enum Finish {
    /// Already a finished file (one piece, Ogg Opus).
    Nothing,
    /// Write the exact sizes over the streaming placeholders.
    WavSizes,
    /// Put this LAME/Info tag frame in front.
    Mp3Tag(Vec<u8>),
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
                self.state = State::Done(Finish::Nothing);
                return encode(samples, rate, self.format);
            }
            self.state = match self.format {
                AudioFormat::Wav => {
                    wav_header(&mut out, rate, None);
                    State::Wav
                }
                AudioFormat::Mp3 => {
                    // With the tag enabled LAME writes an empty frame first, to be overwritten
                    // with the tag at the end; it is dropped from the stream (see the module
                    // docs) and the tag goes in front in `finish`.
                    State::Mp3 {
                        encoder: Box::new(mp3_encoder(rate, true)?),
                        held: Vec::new(),
                        dropped: 0,
                    }
                }
                AudioFormat::Opus if is_opus_rate(rate) => {
                    State::Opus(Box::new(OpusStream::new(rate, rate)?))
                }
                AudioFormat::Opus => State::Buffered(Vec::new()),
            };
        }
        let mut finish = Finish::Nothing;
        match &mut self.state {
            State::Fresh => unreachable!("set above"),
            State::Done(_) => panic!("push after the last piece"),
            State::Wav => {
                pcm16(&mut out, samples);
                finish = Finish::WavSizes;
            }
            State::Mp3 {
                encoder,
                held,
                dropped,
            } => {
                mp3_frames(encoder, samples, &mut out)?;
                if last {
                    mp3_flush(encoder, &mut out)?;
                }
                // LAME knows the reserved frame's size once it has encoded a frame; with a
                // short first piece its (empty) bytes can come out before that: they are held
                // back until it is known (they hold no audio).
                if !held.is_empty() {
                    out.splice(0..0, std::mem::take(held));
                }
                let reserved = encoder.lame_tag_size();
                if reserved == 0 && !last {
                    *held = std::mem::take(&mut out);
                }
                let drop = reserved.saturating_sub(*dropped).min(out.len());
                out.drain(..drop);
                *dropped += drop;
                if last {
                    let mut tag = Vec::with_capacity(encoder.lame_tag_size());
                    if encoder.lame_tag_encode_to_vec(&mut tag).is_some() {
                        finish = Finish::Mp3Tag(tag);
                    }
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
            self.state = State::Done(finish);
        }
        Ok(out)
    }

    /// Turns `streamed`, the concatenation of every push's bytes, into the finished file (see
    /// the module docs): exact wav sizes, the mp3 Info tag in front; other files are left as
    /// they are.
    ///
    /// # Panics
    /// Before the push with `last`.
    pub fn finish(&self, streamed: &mut Vec<u8>) -> Result<(), EncodeError> {
        let State::Done(finish) = &self.state else {
            panic!("finish before the last piece");
        };
        match finish {
            Finish::Nothing => {}
            Finish::WavSizes => {
                let data_len = streamed
                    .len()
                    .checked_sub(WAV_HEADER)
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|&n| n <= u32::MAX - WAV_HEADER as u32)
                    .ok_or(EncodeError::TooLong {
                        format: AudioFormat::Wav,
                    })?;
                let mut header = Vec::with_capacity(WAV_HEADER);
                wav_header(&mut header, self.sample_rate, Some(data_len));
                streamed[..WAV_HEADER].copy_from_slice(&header);
            }
            Finish::Mp3Tag(tag) => {
                streamed.splice(0..0, tag.iter().copied());
            }
        }
        Ok(())
    }
}
