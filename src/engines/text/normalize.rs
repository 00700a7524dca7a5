//! English text normalisation before phonemizing: espeak-ng reads "$3.50" as "dollar three point
//! five zero" and "Dr." as "drive", so numbers, dates, times, currency, ordinals, percentages and
//! common abbreviations are written out as words first ("$3.50" → "three dollars fifty",
//! "Dr. Smith" → "doctor Smith", "2026" → "twenty twenty-six"), as misaki does for Kokoro.
//!
//! Runs before the text is split into sentences, so that an abbreviation's full stop is not taken
//! for the end of one.

use std::sync::LazyLock;

use regex::{Captures, Regex};

const ONES: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];
const TENS: [&str; 10] = [
    "", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Abbreviations written with a full stop, case-sensitive, and what is said.
const ABBREVIATIONS: &[(&str, &str)] = &[
    ("Dr.", "doctor"),
    ("Mr.", "mister"),
    ("Mrs.", "missus"),
    ("Ms.", "miz"),
    ("Prof.", "professor"),
    ("Jr.", "junior"),
    ("Sr.", "senior"),
    ("St.", "saint"),
    ("Mt.", "mount"),
    ("Ave.", "avenue"),
    ("Blvd.", "boulevard"),
    ("Rd.", "road"),
    ("Gen.", "general"),
    ("Capt.", "captain"),
    ("Lt.", "lieutenant"),
    ("Sgt.", "sergeant"),
    ("Gov.", "governor"),
    ("Sen.", "senator"),
    ("Rep.", "representative"),
    ("Inc.", "incorporated"),
    ("Ltd.", "limited"),
    ("Co.", "company"),
    ("Corp.", "corporation"),
    ("Dept.", "department"),
    ("Univ.", "university"),
    ("approx.", "approximately"),
    ("vs.", "versus"),
    ("etc.", "et cetera"),
    ("e.g.", "for example"),
    ("i.e.", "that is"),
    ("a.m.", "a m"),
    ("p.m.", "p m"),
];

/// Units after a number, and their singular and plural (no one-letter units but metres: "1990s"
/// is a decade, not seconds).
const UNITS: &[(&str, &str, &str)] = &[
    ("km", "kilometer", "kilometers"),
    ("m", "meter", "meters"),
    ("cm", "centimeter", "centimeters"),
    ("mm", "millimeter", "millimeters"),
    ("kg", "kilogram", "kilograms"),
    ("mg", "milligram", "milligrams"),
    ("lb", "pound", "pounds"),
    ("lbs", "pound", "pounds"),
    ("mi", "mile", "miles"),
    ("ft", "foot", "feet"),
    ("mph", "mile per hour", "miles per hour"),
    ("km/h", "kilometer per hour", "kilometers per hour"),
    ("GB", "gigabyte", "gigabytes"),
    ("MB", "megabyte", "megabytes"),
    ("KB", "kilobyte", "kilobytes"),
    ("TB", "terabyte", "terabytes"),
    ("ms", "millisecond", "milliseconds"),
    ("min", "minute", "minutes"),
    ("°C", "degree Celsius", "degrees Celsius"),
    ("°F", "degree Fahrenheit", "degrees Fahrenheit"),
];

/// Below one thousand.
fn hundreds(n: u64, out: &mut Vec<String>) {
    debug_assert!(n < 1000);
    if n >= 100 {
        out.push(ONES[(n / 100) as usize].to_owned());
        out.push("hundred".to_owned());
    }
    let rest = n % 100;
    if rest == 0 {
        return;
    }
    if rest < 20 {
        out.push(ONES[rest as usize].to_owned());
    } else if rest.is_multiple_of(10) {
        out.push(TENS[(rest / 10) as usize].to_owned());
    } else {
        out.push(format!(
            "{}-{}",
            TENS[(rest / 10) as usize],
            ONES[(rest % 10) as usize]
        ));
    }
}

/// A cardinal number in words: 1234 → "one thousand two hundred thirty-four".
pub fn cardinal(n: u64) -> String {
    if n == 0 {
        return "zero".to_owned();
    }
    let mut out = Vec::new();
    let scales = [
        (1_000_000_000_000_000_000, "quintillion"),
        (1_000_000_000_000_000, "quadrillion"),
        (1_000_000_000_000, "trillion"),
        (1_000_000_000, "billion"),
        (1_000_000, "million"),
        (1_000, "thousand"),
    ];
    let mut rest = n;
    for (scale, name) in scales {
        if rest >= scale {
            hundreds(rest / scale, &mut out);
            out.push(name.to_owned());
            rest %= scale;
        }
    }
    hundreds(rest, &mut out);
    out.join(" ")
}

/// An ordinal in words: 21 → "twenty-first".
pub fn ordinal(n: u64) -> String {
    let words = cardinal(n);
    let (head, last) = match words.rfind([' ', '-']) {
        Some(i) => words.split_at(i + 1),
        None => ("", words.as_str()),
    };
    let last = match last {
        "one" => "first".to_owned(),
        "two" => "second".to_owned(),
        "three" => "third".to_owned(),
        "five" => "fifth".to_owned(),
        "eight" => "eighth".to_owned(),
        "nine" => "ninth".to_owned(),
        "twelve" => "twelfth".to_owned(),
        w if w.ends_with('y') => format!("{}ieth", &w[..w.len() - 1]),
        w => format!("{w}th"),
    };
    format!("{head}{last}")
}

/// A year as said: 2026 → "twenty twenty-six", 1900 → "nineteen hundred", 2005 → "two thousand
/// five", 1905 → "nineteen oh five".
pub fn year(n: u64) -> String {
    let (high, low) = (n / 100, n % 100);
    if !(1000..10_000).contains(&n) || (n % 1000 < 10 && high % 10 == 0) {
        return cardinal(n);
    }
    match low {
        0 => format!("{} hundred", cardinal(high)),
        1..=9 => format!("{} oh {}", cardinal(high), cardinal(low)),
        _ => format!("{} {}", cardinal(high), cardinal(low)),
    }
}

fn digits(s: &str) -> u64 {
    s.chars().filter(char::is_ascii_digit).fold(0u64, |n, d| {
        n.saturating_mul(10)
            .saturating_add(u64::from(d as u8 - b'0'))
    })
}

/// "3.14" → "three point one four"; "1,000" → "one thousand".
fn number(int: &str, frac: Option<&str>) -> String {
    let mut words = cardinal(digits(int));
    if let Some(frac) = frac.filter(|f| !f.is_empty()) {
        words.push_str(" point");
        for d in frac.chars() {
            words.push(' ');
            words.push_str(ONES[usize::from(d as u8 - b'0')]);
        }
    }
    words
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", cardinal(n), if n == 1 { one } else { many })
}

static CURRENCY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"([$£€])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,2}))?(?:\s*(million|billion|thousand|trillion)\b)?",
    )
    .expect("currency pattern")
});
static ISO_DATE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(\d{4})-(\d{2})-(\d{2})\b").expect("date pattern"));
static US_DATE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b").expect("date pattern"));
static MONTH_DAY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b(January|February|March|April|May|June|July|August|September|October|November|December|Jan\.|Feb\.|Mar\.|Apr\.|Jun\.|Jul\.|Aug\.|Sept?\.|Oct\.|Nov\.|Dec\.) (\d{1,2})(?:st|nd|rd|th)?\b",
    )
    .expect("month pattern")
});
static TIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(\d{1,2}):(\d{2})(?:\s*([AaPp])\.?[Mm]\.?)?(?:\s|$|\b)").expect("time pattern")
});
static ORDINAL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(\d+)(st|nd|rd|th)\b").expect("ordinal pattern"));
static PERCENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\d+(?:\.\d+)?)\s?%").expect("percent pattern"));
static UNIT: LazyLock<Regex> = LazyLock::new(|| {
    let mut names: Vec<&str> = UNITS.iter().map(|(u, _, _)| *u).collect();
    names.sort_by_key(|u| std::cmp::Reverse(u.len()));
    let alternatives = names
        .iter()
        .map(|u| regex::escape(u))
        .collect::<Vec<_>>()
        .join("|");
    Regex::new(&format!(
        r"\b(\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.(\d+))?\s?({alternatives})(?:$|[^\w°/])"
    ))
    .expect("unit pattern")
});
static YEAR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(1[1-9]\d\d|20\d\d)(s?)\b").expect("year pattern"));
static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(^|[^\w.])(-)?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?\b").expect("number pattern")
});
static ABBREVIATION: LazyLock<Regex> = LazyLock::new(|| {
    let alternatives = ABBREVIATIONS
        .iter()
        .map(|(a, _)| regex::escape(a))
        .collect::<Vec<_>>()
        .join("|");
    Regex::new(&format!(r"(^|[^\w.])({alternatives})")).expect("abbreviation pattern")
});
/// British style writes titles without the full stop: "Dr Smith", "Mrs Jones".
static TITLE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(Dr|Mr|Mrs|Ms|Prof) ([A-Z])").expect("title pattern"));
static NUMBER_SIGN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:\bNo\.|#)\s?(\d)").expect("number sign pattern"));

fn month_name(abbreviated: &str) -> &'static str {
    let key = &abbreviated[..3];
    MONTHS
        .iter()
        .find(|m| m.starts_with(key))
        .copied()
        .unwrap_or("")
}

/// A date as said in American English: "November twenty-third, twenty twenty-six".
fn date(month: u64, day: u64, y: u64) -> Option<String> {
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    Some(format!(
        "{} {}, {}",
        MONTHS[(month - 1) as usize],
        ordinal(day),
        year(y)
    ))
}

/// Writes numbers, dates, times, currency and abbreviations of English `text` out as words.
pub fn english(text: &str) -> String {
    let text = text.replace(['\u{2019}', '\u{2018}'], "'");
    let text = ABBREVIATION.replace_all(&text, |c: &Captures<'_>| {
        let said = ABBREVIATIONS
            .iter()
            .find(|(a, _)| *a == &c[2])
            .map_or("", |(_, s)| *s);
        format!("{}{said}", &c[1])
    });
    let text = TITLE.replace_all(&text, |c: &Captures<'_>| {
        let said = ABBREVIATIONS
            .iter()
            .find(|(a, _)| a.strip_suffix('.') == Some(&c[1]))
            .map_or("", |(_, s)| *s);
        format!("{said} {}", &c[2])
    });
    let text = NUMBER_SIGN.replace_all(&text, "number $1");
    let text = CURRENCY.replace_all(&text, |c: &Captures<'_>| {
        let whole = digits(&c[2]);
        let cents = c.get(3).map(|m| {
            let s = m.as_str();
            if s.len() == 1 {
                digits(s) * 10
            } else {
                digits(s)
            }
        });
        let (one, many, cent_one, cent_many) = match &c[1] {
            "£" => ("pound", "pounds", "penny", "pence"),
            "€" => ("euro", "euros", "cent", "cents"),
            _ => ("dollar", "dollars", "cent", "cents"),
        };
        if let Some(scale) = c.get(4) {
            // "$2.5 million" → "two point five million dollars"
            return format!(
                "{} {} {many}",
                number(&c[2], c.get(3).map(|m| m.as_str())),
                scale.as_str()
            );
        }
        match cents {
            Some(cents) if cents > 0 && whole == 0 => plural(cents, cent_one, cent_many),
            Some(cents) if cents > 0 => {
                format!("{} {}", plural(whole, one, many), cardinal(cents))
            }
            _ => plural(whole, one, many),
        }
    });
    let text = ISO_DATE.replace_all(&text, |c: &Captures<'_>| {
        date(digits(&c[2]), digits(&c[3]), digits(&c[1])).unwrap_or_else(|| c[0].to_owned())
    });
    let text = US_DATE.replace_all(&text, |c: &Captures<'_>| {
        date(digits(&c[1]), digits(&c[2]), digits(&c[3])).unwrap_or_else(|| c[0].to_owned())
    });
    let text = MONTH_DAY.replace_all(&text, |c: &Captures<'_>| {
        let day = digits(&c[2]);
        if (1..=31).contains(&day) {
            format!("{} {}", month_name(&c[1]), ordinal(day))
        } else {
            c[0].to_owned()
        }
    });
    let text = TIME.replace_all(&text, |c: &Captures<'_>| {
        let (h, m) = (digits(&c[1]), digits(&c[2]));
        if h > 23 || m > 59 {
            return c[0].to_owned();
        }
        let mut said = cardinal(h);
        match m {
            0 if c.get(3).is_none() => said.push_str(" o'clock"),
            0 => {}
            1..=9 => {
                said.push_str(" oh ");
                said.push_str(&cardinal(m));
            }
            _ => {
                said.push(' ');
                said.push_str(&cardinal(m));
            }
        }
        if let Some(half) = c.get(3) {
            said.push_str(if half.as_str().eq_ignore_ascii_case("a") {
                " a m"
            } else {
                " p m"
            });
        }
        let end = &c[0][c[0].trim_end().len()..];
        format!("{said}{end}")
    });
    let text = ORDINAL.replace_all(&text, |c: &Captures<'_>| ordinal(digits(&c[1])));
    let text = PERCENT.replace_all(&text, |c: &Captures<'_>| {
        let (int, frac) = c[1]
            .split_once('.')
            .map_or((&c[1], None), |(i, f)| (i, Some(f)));
        format!("{} percent", number(int, frac))
    });
    let text = UNIT.replace_all(&text, |c: &Captures<'_>| {
        let (_, one, many) = UNITS
            .iter()
            .find(|(u, _, _)| *u == &c[3])
            .expect("matched a unit");
        let unit = if c.get(2).is_none() && digits(&c[1]) == 1 {
            one
        } else {
            many
        };
        let tail = &c[0][c.get(3).map_or(0, |m| m.end() - c.get(0).unwrap().start())..];
        format!(
            "{} {unit}{tail}",
            number(&c[1], c.get(2).map(|m| m.as_str()))
        )
    });
    let text = YEAR.replace_all(&text, |c: &Captures<'_>| {
        let said = year(digits(&c[1]));
        if c[2].is_empty() {
            said
        } else if let Some(stem) = said.strip_suffix('y') {
            // "1990s" → "nineteen nineties"
            format!("{stem}ies")
        } else {
            format!("{said}s")
        }
    });
    let text = NUMBER.replace_all(&text, |c: &Captures<'_>| {
        let sign = if c.get(2).is_some() { "minus " } else { "" };
        format!(
            "{}{sign}{}",
            &c[1],
            number(&c[3], c.get(4).map(|m| m.as_str()))
        )
    });
    let text = text.replace('&', " and ");
    text.split(' ')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_table() {
        let cases = [
            ("$3.50", "three dollars fifty"),
            ("It costs $1.", "It costs one dollar."),
            ("$0.99", "ninety-nine cents"),
            ("$1,250", "one thousand two hundred fifty dollars"),
            ("£5 and €20", "five pounds and twenty euros"),
            ("$2.5 million", "two point five million dollars"),
            ("Dr. Smith", "doctor Smith"),
            ("Mr. and Mrs. Jones", "mister and missus Jones"),
            ("Dr Smith and Mrs Jones", "doctor Smith and missus Jones"),
            ("Drive to Mr", "Drive to Mr"),
            ("St. Louis", "saint Louis"),
            ("cats vs. dogs", "cats versus dogs"),
            ("apples, pears, etc.", "apples, pears, et cetera"),
            ("e.g. this", "for example this"),
            ("2026", "twenty twenty-six"),
            ("In 1999 we", "In nineteen ninety-nine we"),
            ("the 1990s", "the nineteen nineties"),
            ("2000", "two thousand"),
            ("2005", "two thousand five"),
            ("1905", "nineteen oh five"),
            ("1900", "nineteen hundred"),
            ("42", "forty-two"),
            ("7 cats", "seven cats"),
            ("0", "zero"),
            ("100", "one hundred"),
            ("1,000,000", "one million"),
            ("12,345", "twelve thousand three hundred forty-five"),
            ("3.14", "three point one four"),
            ("-5 degrees", "minus five degrees"),
            ("the 1st and 2nd", "the first and second"),
            ("21st century", "twenty-first century"),
            ("the 100th time", "the one hundredth time"),
            ("12th", "twelfth"),
            ("50%", "fifty percent"),
            ("2.5%", "two point five percent"),
            ("3:30", "three thirty"),
            ("at 10:00.", "at ten o'clock."),
            ("7:05 pm", "seven oh five p m"),
            ("11:45 AM", "eleven forty-five a m"),
            ("2026-11-23", "November twenty-third, twenty twenty-six"),
            ("12/25/2026", "December twenty-fifth, twenty twenty-six"),
            ("March 3", "March third"),
            ("Jan. 1st", "January first"),
            ("5 km", "five kilometers"),
            ("1 kg", "one kilogram"),
            ("2.5 GB", "two point five gigabytes"),
            ("No. 5", "number five"),
            ("salt & pepper", "salt and pepper"),
            ("Hello, world!", "Hello, world!"),
            ("Room 101", "Room one hundred one"),
        ];
        assert!(cases.len() >= 30);
        let mut failures = Vec::new();
        for (input, expected) in cases {
            let got = english(input);
            if got != expected {
                failures.push(format!("{input:?} → {got:?}, expected {expected:?}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn words() {
        assert_eq!(cardinal(999), "nine hundred ninety-nine");
        assert_eq!(cardinal(1_000_001), "one million one");
        assert_eq!(ordinal(40), "fortieth");
        assert_eq!(ordinal(1003), "one thousand third");
        assert_eq!(year(2010), "twenty ten");
        assert_eq!(year(1066), "ten sixty-six");
    }
}
