//! Host-side sampling of a language model's next token, in the upstream Chatterbox Turbo order:
//! temperature → top-k → top-p → repetition penalty → draw (Hugging Face's logits processors,
//! same semantics). Computed in f64; the draw is an inverse CDF of one uniform number, so that a
//! reference implementation fed the same uniforms picks the same ids.

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
    let mut seen = std::collections::BTreeSet::new();
    for &id in generated {
        if let Ok(i) = usize::try_from(id)
            && i < x.len()
            && seen.insert(i)
        {
            let v = x[i];
            x[i] = if v > 0.0 {
                v / params.repetition_penalty
            } else {
                v * params.repetition_penalty
            };
        }
    }
    draw(&softmax(&x), uniform)
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
}
