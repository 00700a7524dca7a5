//! Host sampling in Hugging Face `generate`'s order, as upstream Qwen3-TTS samples: repetition
//! penalty on the ids generated so far → suppressed ids (−∞) → temperature → top-k → top-p →
//! one draw (inverse CDF of a uniform number, so a reference fed the same uniforms agrees).

use crate::engines::sampling::{draw, softmax, top_k, top_p};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Warp {
    pub temperature: f64,
    pub top_k: usize,
    pub top_p: f64,
    /// 1.0 turns it off.
    pub repetition_penalty: f64,
}

pub fn sample(
    logits: &[f32],
    generated: &[i64],
    suppressed: impl Fn(usize) -> bool,
    warp: Warp,
    uniform: f64,
) -> usize {
    let mut x: Vec<f64> = logits.iter().map(|&l| f64::from(l)).collect();
    let mut seen = std::collections::BTreeSet::new();
    for &id in generated {
        if let Ok(i) = usize::try_from(id)
            && i < x.len()
            && seen.insert(i)
        {
            let v = x[i];
            x[i] = if v < 0.0 {
                v * warp.repetition_penalty
            } else {
                v / warp.repetition_penalty
            };
        }
    }
    for (i, v) in x.iter_mut().enumerate() {
        if suppressed(i) {
            *v = f64::NEG_INFINITY;
        } else {
            *v /= warp.temperature;
        }
    }
    top_k(&mut x, warp.top_k);
    top_p(&mut x, warp.top_p);
    draw(&softmax(&x), uniform)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: Warp = Warp {
        temperature: 1.0,
        top_k: 0,
        top_p: 1.0,
        repetition_penalty: 1.0,
    };

    #[test]
    fn suppressed_ids_are_never_drawn() {
        let logits = [0.0f32, 9.0, 0.0, 0.0];
        for u in [0.0, 0.5, 0.999] {
            assert_ne!(sample(&logits, &[], |i| i == 1, PLAIN, u), 1);
        }
        assert_eq!(sample(&logits, &[], |_| false, PLAIN, 0.5), 1);
    }

    #[test]
    fn the_penalty_comes_before_the_temperature_and_top_k() {
        // Penalised first, 2.0 / 2.0 = 1.0 ties with id 1; top-k 1 keeps both (ties kept).
        let logits = [2.0f32, 1.0, -5.0];
        let warp = Warp {
            top_k: 1,
            repetition_penalty: 2.0,
            ..PLAIN
        };
        assert_eq!(sample(&logits, &[0, 0], |_| false, warp, 0.99), 1);
        assert_eq!(sample(&logits, &[], |_| false, warp, 0.99), 0);
    }
}
