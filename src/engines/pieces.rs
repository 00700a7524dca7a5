//! The piece loop every speech engine runs: a text is split into pieces (sentences, or parts of
//! a long one); each is spoken in turn, its audio clamped to [-1, 1] and followed by its pause,
//! the cancellation checked before each piece (engines also check it inside a piece). A
//! cancelled generation stops there; its audio is never stored.

use crate::engines::text::Piece;
use crate::engines::{EngineError, Pcm, Segment, SynthesisInput};

/// A part of a text and the silence that follows it when another part comes after.
pub trait Paused {
    fn pause_secs(&self) -> f32;
}

impl Paused for Piece {
    fn pause_secs(&self) -> f32 {
        self.boundary.pause_secs()
    }
}

impl Paused for Segment {
    fn pause_secs(&self) -> f32 {
        self.pause_secs
    }
}

/// What an engine made of one piece: its audio, and whatever else it keeps of the piece (the
/// engines' traces, for the differential tests).
pub trait Spoken {
    fn audio(&self) -> &[f32];
}

impl Spoken for Vec<f32> {
    fn audio(&self) -> &[f32] {
        self
    }
}

/// `pieces`, or the error for a text that gave none.
pub fn some<P>(pieces: Vec<P>) -> Result<Vec<P>, EngineError> {
    if pieces.is_empty() {
        return Err(EngineError::InvalidInput(
            "the text has nothing to pronounce".into(),
        ));
    }
    Ok(pieces)
}

/// Speaks `pieces` in order with `speak(index, piece)` and joins their audio at `sample_rate`,
/// each piece's pause after it but the last's; also returns what `speak` returned per piece.
pub fn render<P: Paused, S: Spoken>(
    pieces: &[P],
    input: &SynthesisInput<'_>,
    sample_rate: u32,
    mut speak: impl FnMut(usize, &P) -> Result<S, EngineError>,
) -> Result<(Pcm, Vec<S>), EngineError> {
    let mut samples = Vec::new();
    let mut spoken = Vec::with_capacity(pieces.len());
    let last = pieces.len().saturating_sub(1);
    for (i, piece) in pieces.iter().enumerate() {
        if input.is_cancelled() {
            return Err(EngineError::Cancelled);
        }
        let said = speak(i, piece)?;
        let pause = if i < last { piece.pause_secs() } else { 0.0 };
        append(&mut samples, said.audio(), pause, sample_rate);
        spoken.push(said);
    }
    let pcm = Pcm {
        samples,
        sample_rate,
        words: Vec::new(),
    };
    Ok((pcm, spoken))
}

/// Appends one piece's `audio` clamped to [-1, 1], then `pause_secs` of silence.
pub fn append(samples: &mut Vec<f32>, audio: &[f32], pause_secs: f32, sample_rate: u32) {
    samples.extend(audio.iter().map(|s| s.clamp(-1.0, 1.0)));
    let pause = (pause_secs * sample_rate as f32) as usize;
    samples.resize(samples.len() + pause, 0.0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::Cancel;

    fn input<'a>(cancel: Option<&'a Cancel>) -> SynthesisInput<'a> {
        SynthesisInput {
            text: "",
            preset: "",
            language: "en",
            seed: 0,
            temperature: None,
            cancel,
            voice_print: None,
            instruction: None,
        }
    }

    fn segment(pause_secs: f32) -> Segment {
        Segment {
            text: String::new(),
            tokens: Vec::new(),
            pause_secs,
        }
    }

    #[test]
    fn pieces_are_clamped_and_paused_but_the_last() {
        let pieces = [segment(0.5), segment(0.25)];
        let (pcm, spoken) = render(&pieces, &input(None), 4, |i, _| {
            Ok(vec![2.0 * (i as f32 + 1.0), -0.5])
        })
        .unwrap();
        assert_eq!(pcm.samples, [1.0, -0.5, 0.0, 0.0, 1.0, -0.5]);
        assert_eq!(pcm.sample_rate, 4);
        assert_eq!(spoken, [vec![2.0, -0.5], vec![4.0, -0.5]]);
    }

    #[test]
    fn a_cancelled_generation_speaks_no_further_piece() {
        let cancel = Cancel::new();
        let pieces = [segment(0.0), segment(0.0), segment(0.0)];
        let mut spoken = 0;
        let outcome = render(&pieces, &input(Some(&cancel)), 24_000, |i, _| {
            spoken += 1;
            if i == 1 {
                cancel.cancel();
            }
            Ok(vec![0.0])
        });
        assert!(matches!(outcome, Err(EngineError::Cancelled)));
        assert_eq!(spoken, 2);
        assert!(matches!(
            some(Vec::<Segment>::new()),
            Err(EngineError::InvalidInput(_))
        ));
    }
}
