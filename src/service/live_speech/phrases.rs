//! A context's text as it arrives in pieces, cut into phrases: at a sentence's end (`.`, `!`,
//! `?`, `…` followed by a space), when the client's chunk schedule is reached (ElevenLabs'
//! `chunk_length_schedule`: the n-th phrase is cut once the buffer holds `schedule[n]`
//! characters, at its last space; not in `auto_mode`), at [`MAX_PHRASE_CHARS`] whatever the
//! client asked, and at a flush or the context's end (everything left).

/// ElevenLabs' default chunk schedule.
pub const DEFAULT_SCHEDULE: [usize; 4] = [120, 160, 250, 290];
/// A phrase is cut at this many characters even without a sentence end or a schedule, so that
/// a context's buffer (and one generation) stays small.
pub const MAX_PHRASE_CHARS: usize = 1000;
/// Bounds of one schedule entry (ElevenLabs': 50 to 500).
pub const SCHEDULE_RANGE: std::ops::RangeInclusive<usize> = 50..=500;

const SENTENCE_ENDS: &[char] = &['.', '!', '?', '…', '。', '！', '？'];

/// One context's buffered text.
#[derive(Debug, Default)]
pub struct Buffer {
    text: String,
    /// Phrases cut so far (the schedule's index).
    cut: usize,
}

impl Buffer {
    pub fn push(&mut self, text: &str) {
        self.text.push_str(text);
    }

    /// Whether text that says something is waiting (spaces alone say nothing).
    pub fn has_words(&self) -> bool {
        self.text.chars().any(|c| !c.is_whitespace())
    }

    /// The phrases complete now (at most one: everything up to the last cut).
    pub fn ready(&mut self, schedule: Option<&[usize]>) -> Option<String> {
        let mut cut = last_sentence_end(&self.text);
        let chars = self.text.chars().count();
        let limit = schedule
            .and_then(|s| s.get(self.cut.min(s.len().saturating_sub(1))).copied())
            .unwrap_or(MAX_PHRASE_CHARS)
            .min(MAX_PHRASE_CHARS);
        if chars >= limit {
            let at_space = self
                .text
                .char_indices()
                .rev()
                .find(|(_, c)| c.is_whitespace())
                .map(|(i, c)| i + c.len_utf8());
            let forced = (chars >= MAX_PHRASE_CHARS).then_some(self.text.len());
            cut = cut.max(at_space.or(forced));
        }
        let cut = cut.filter(|&at| self.text[..at].chars().any(|c| !c.is_whitespace()))?;
        let rest = self.text.split_off(cut);
        self.cut += 1;
        Some(std::mem::replace(&mut self.text, rest))
    }

    /// Everything left (a flush, the context's end); `None` when it says nothing.
    pub fn take(&mut self) -> Option<String> {
        let text = std::mem::take(&mut self.text);
        if text.chars().all(char::is_whitespace) {
            return None;
        }
        self.cut += 1;
        Some(text)
    }
}

/// The byte offset just after the last sentence end followed by whitespace (the whitespace
/// included).
fn last_sentence_end(text: &str) -> Option<usize> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut found = None;
    for pair in chars.windows(2) {
        let ((_, c), (j, next)) = (pair[0], pair[1]);
        if SENTENCE_ENDS.contains(&c) && next.is_whitespace() {
            found = Some(j + next.len_utf8());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentence_end_cuts_and_keeps_the_rest() {
        let mut buffer = Buffer::default();
        buffer.push(" ");
        assert_eq!(buffer.ready(None), None);
        buffer.push("Hello there. How ");
        assert_eq!(buffer.ready(None).as_deref(), Some(" Hello there. "));
        buffer.push("are you");
        assert_eq!(buffer.ready(None), None);
        assert_eq!(buffer.take().as_deref(), Some("How are you"));
        buffer.push("  ");
        assert_eq!(buffer.take(), None);
    }

    #[test]
    fn the_schedule_cuts_at_the_last_space() {
        let mut buffer = Buffer::default();
        let schedule = [50];
        buffer.push(&"word ".repeat(9));
        assert_eq!(buffer.ready(Some(&schedule)), None);
        buffer.push("word word");
        let phrase = buffer.ready(Some(&schedule)).unwrap();
        assert_eq!(phrase, "word ".repeat(10));
        assert_eq!(buffer.take().as_deref(), Some("word"));
    }

    #[test]
    fn a_decimal_point_is_not_a_sentence_end() {
        let mut buffer = Buffer::default();
        buffer.push("It costs 3.50 dollars");
        assert_eq!(buffer.ready(None), None);
    }
}
