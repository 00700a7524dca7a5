//! Host-side sampling of a language model's next token, in each upstream's order (Hugging
//! Face's logits processors, same semantics):
//!
//! * Chatterbox Turbo ([`sample`]): temperature → top-k → top-p → repetition penalty → draw;
//! * Chatterbox multilingual ([`sample_guided`], `t3.py`): classifier-free guidance
//!   `cond + w·(cond − uncond)` → repetition penalty → temperature → min-p → top-p → draw.
//!
//! Computed in f64; the draw is an inverse CDF of one uniform number, so that a reference
//! implementation fed the same uniforms picks the same ids.

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    pub temperature: f64,
    pub top_k: usize,
    pub top_p: f64,
    pub repetition_penalty: f64,
}

/// Picks the next id from `logits` given the ids generated so far and a uniform draw in [0, 1).
pub fn sample(logits: &[f32], generated: &[i64], params: Sampling, uniform: f64) -> usize {
    let mut x: Vec<f64> = logits
        .iter()
        .map(|&l| f64::from(l) / params.temperature)
        .collect();
    top_k(&mut x, params.top_k);
    top_p(&mut x, params.top_p);
    penalize(&mut x, generated, params.repetition_penalty);
    draw(&softmax(&x), uniform)
}

/// The multilingual model's settings (`ChatterboxMultilingualTTS.generate` defaults apart from
/// the temperature).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GuidedSampling {
    pub cfg_weight: f64,
    pub repetition_penalty: f64,
    pub temperature: f64,
    pub min_p: f64,
    pub top_p: f64,
}

/// Picks the next id from the conditional and unconditional rows' logits (classifier-free
/// guidance as a batch of two) given the ids generated so far and a uniform draw in [0, 1).
pub fn sample_guided(
    cond: &[f32],
    uncond: &[f32],
    generated: &[i64],
    params: GuidedSampling,
    uniform: f64,
) -> usize {
    let mut x: Vec<f64> = cond
        .iter()
        .zip(uncond)
        .map(|(&c, &u)| {
            let c = f64::from(c);
            c + params.cfg_weight * (c - f64::from(u))
        })
        .collect();
    penalize(&mut x, generated, params.repetition_penalty);
    for v in &mut x {
        *v /= params.temperature;
    }
    min_p(&mut x, params.min_p);
    top_p(&mut x, params.top_p);
    draw(&softmax(&x), uniform)
}

/// Divides positive (multiplies negative) logits of every id generated so far by `penalty`,
/// once per id.
fn penalize(x: &mut [f64], generated: &[i64], penalty: f64) {
    let mut seen = std::collections::BTreeSet::new();
    for &id in generated {
        if let Ok(i) = usize::try_from(id)
            && i < x.len()
            && seen.insert(i)
        {
            let v = x[i];
            x[i] = if v > 0.0 { v / penalty } else { v * penalty };
        }
    }
}

/// Removes the ids less likely than `min_p` times the most likely one (which always stays).
fn min_p(x: &mut [f64], min_p: f64) {
    if min_p <= 0.0 {
        return;
    }
    let probs = softmax(x);
    let threshold = min_p * probs.iter().copied().fold(0.0, f64::max);
    for (v, p) in x.iter_mut().zip(probs) {
        if p < threshold {
            *v = f64::NEG_INFINITY;
        }
    }
}

/// Keeps the logits at least as large as the k-th largest (ties kept).
pub(crate) fn top_k(x: &mut [f64], k: usize) {
    if k == 0 || k >= x.len() {
        return;
    }
    let mut sorted = x.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let kth = sorted[k - 1];
    for v in x.iter_mut().filter(|v| **v < kth) {
        *v = f64::NEG_INFINITY;
    }
}

/// Removes the least likely ids whose cumulative probability (ascending) is at most 1 − p,
/// always keeping the most likely one.
pub(crate) fn top_p(x: &mut [f64], p: f64) {
    if p >= 1.0 {
        return;
    }
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    let sorted: Vec<f64> = order.iter().map(|&i| x[i]).collect();
    let probs = softmax(&sorted);
    let mut cumulative = 0.0;
    let last = order.len() - 1;
    for (rank, (&i, prob)) in order.iter().zip(probs).enumerate() {
        cumulative += prob;
        if rank < last && cumulative <= 1.0 - p {
            x[i] = f64::NEG_INFINITY;
        }
    }
}

pub(crate) fn softmax(x: &[f64]) -> Vec<f64> {
    let max = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let exp: Vec<f64> = x.iter().map(|v| (v - max).exp()).collect();
    let sum: f64 = exp.iter().sum();
    exp.into_iter().map(|e| e / sum).collect()
}

/// The first id whose cumulative probability exceeds `uniform` × total.
pub(crate) fn draw(probs: &[f64], uniform: f64) -> usize {
    let total: f64 = probs.iter().sum();
    let target = uniform * total;
    let mut cumulative = 0.0;
    let mut last_possible = 0;
    for (i, p) in probs.iter().enumerate() {
        if *p > 0.0 {
            last_possible = i;
        }
        cumulative += p;
        if cumulative > target && *p > 0.0 {
            return i;
        }
    }
    last_possible
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: Sampling = Sampling {
        temperature: 1.0,
        top_k: 0,
        top_p: 1.0,
        repetition_penalty: 1.0,
    };

    #[test]
    fn the_draw_is_an_inverse_cdf() {
        let logits = [0.0f32, 0.0, 0.0, 0.0];
        assert_eq!(sample(&logits, &[], PLAIN, 0.0), 0);
        assert_eq!(sample(&logits, &[], PLAIN, 0.3), 1);
        assert_eq!(sample(&logits, &[], PLAIN, 0.99), 3);
    }

    #[test]
    fn top_k_and_top_p_cut_the_tail() {
        let logits = [5.0f32, 4.0, 0.0, -1.0];
        let k1 = Sampling { top_k: 1, ..PLAIN };
        assert_eq!(sample(&logits, &[], k1, 0.999), 0);
        // softmax ≈ [0.727, 0.268, 0.005, 0.002]: top-p 0.9 keeps ids 0 and 1 only.
        let p = Sampling {
            top_p: 0.9,
            ..PLAIN
        };
        assert_eq!(sample(&logits, &[], p, 0.999), 1);
        assert_eq!(sample(&logits, &[], PLAIN, 0.999), 3);
    }

    #[test]
    fn temperature_and_penalty_change_the_pick() {
        let logits = [1.0f32, 0.9];
        // Near-greedy at a low temperature.
        let cold = Sampling {
            temperature: 0.05,
            ..PLAIN
        };
        assert_eq!(sample(&logits, &[], cold, 0.8), 0);
        let penalised = Sampling {
            repetition_penalty: 1.2,
            ..cold
        };
        assert_eq!(sample(&logits, &[0], penalised, 0.8), 1);
    }

    const GUIDED: GuidedSampling = GuidedSampling {
        cfg_weight: 0.0,
        repetition_penalty: 1.0,
        temperature: 1.0,
        min_p: 0.0,
        top_p: 1.0,
    };

    #[test]
    fn guidance_pushes_away_from_the_unconditional_row() {
        let cond = [1.0f32, 1.0];
        let uncond = [2.0f32, 0.0];
        // Without guidance the two ids are equally likely; with it id 1 wins.
        assert_eq!(sample_guided(&cond, &uncond, &[], GUIDED, 0.4), 0);
        let guided = GuidedSampling {
            cfg_weight: 0.5,
            temperature: 0.05,
            ..GUIDED
        };
        assert_eq!(sample_guided(&cond, &uncond, &[], guided, 0.4), 1);
    }

    #[test]
    fn min_p_cuts_what_is_far_below_the_best() {
        // softmax ≈ [0.867, 0.117, 0.016]: min-p 0.05 keeps what is above 0.043.
        let logits = [4.0f32, 2.0, 0.0];
        let cut = GuidedSampling {
            min_p: 0.05,
            ..GUIDED
        };
        assert_eq!(sample_guided(&logits, &logits, &[], GUIDED, 0.999), 2);
        assert_eq!(sample_guided(&logits, &logits, &[], cut, 0.999), 1);
    }
}
