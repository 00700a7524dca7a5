//! English (`en-us`, `en-gb`) written out as words before phonemizing. The rule for every
//! category is in docs/speech-text.md; the table `cases/en.tsv` is its test.
//!
//! Passes run in a fixed order, most specific first (a URL before a number, a phone number
//! before a range); each writes words, which no later pass matches (they hold no digits or
//! symbols). No pass ever reads a different value than was written: a number too long to say as
//! an amount, or with leading zeros, is read digit by digit.

use std::sync::LazyLock;

use regex::{Captures, Regex};

/// The two dialects: `gb` says "one hundred and one", "the fifth of May", "metres", and "oh"
/// for a zero in a phone number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dialect {
    pub gb: bool,
}

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

/// Most digits an amount is read as a number ("one hundred twenty-three million …") when written
/// without thousands separators; longer runs are identifiers, read digit by digit in groups.
pub const MAX_PLAIN_DIGITS: usize = 9;
/// Most digits of a number written with thousands separators ("1,000,000") read as an amount
/// (up to the quintillions); longer ones are read digit by digit, group by group.
pub const MAX_GROUPED_DIGITS: usize = 21;

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

/// Units after a number: symbol, singular, plural (en-us spelling; en-gb writes "-metre" and
/// "-litre"). No one-letter units but metres, grams, litres and watts/volts: "1990s" is a
/// decade, not seconds.
const UNITS: &[(&str, &str, &str)] = &[
    ("km", "kilometer", "kilometers"),
    ("m", "meter", "meters"),
    ("cm", "centimeter", "centimeters"),
    ("mm", "millimeter", "millimeters"),
    ("m²", "square meter", "square meters"),
    ("km²", "square kilometer", "square kilometers"),
    ("m³", "cubic meter", "cubic meters"),
    ("kg", "kilogram", "kilograms"),
    ("g", "gram", "grams"),
    ("mg", "milligram", "milligrams"),
    ("lb", "pound", "pounds"),
    ("lbs", "pound", "pounds"),
    ("oz", "ounce", "ounces"),
    ("mi", "mile", "miles"),
    ("ft", "foot", "feet"),
    ("yd", "yard", "yards"),
    ("gal", "gallon", "gallons"),
    ("l", "liter", "liters"),
    ("L", "liter", "liters"),
    ("ml", "milliliter", "milliliters"),
    ("mL", "milliliter", "milliliters"),
    ("mph", "mile per hour", "miles per hour"),
    ("km/h", "kilometer per hour", "kilometers per hour"),
    ("kph", "kilometer per hour", "kilometers per hour"),
    ("GB", "gigabyte", "gigabytes"),
    ("MB", "megabyte", "megabytes"),
    ("KB", "kilobyte", "kilobytes"),
    ("kB", "kilobyte", "kilobytes"),
    ("TB", "terabyte", "terabytes"),
    ("Mbps", "megabit per second", "megabits per second"),
    ("Gbps", "gigabit per second", "gigabits per second"),
    ("ms", "millisecond", "milliseconds"),
    ("sec", "second", "seconds"),
    ("secs", "second", "seconds"),
    ("min", "minute", "minutes"),
    ("mins", "minute", "minutes"),
    ("hr", "hour", "hours"),
    ("hrs", "hour", "hours"),
    ("Hz", "hertz", "hertz"),
    ("kHz", "kilohertz", "kilohertz"),
    ("MHz", "megahertz", "megahertz"),
    ("GHz", "gigahertz", "gigahertz"),
    ("W", "watt", "watts"),
    ("kW", "kilowatt", "kilowatts"),
    ("kWh", "kilowatt hour", "kilowatt hours"),
    ("V", "volt", "volts"),
    ("mAh", "milliamp hour", "milliamp hours"),
    ("px", "pixel", "pixels"),
    ("°C", "degree Celsius", "degrees Celsius"),
    ("°F", "degree Fahrenheit", "degrees Fahrenheit"),
    ("°", "degree", "degrees"),
];

/// Given names that take a regnal number ("Henry VIII" → "Henry the Eighth").
const REGNAL: &str = "Henry|Elizabeth|George|Louis|Charles|Edward|William|James|Richard|John|Paul|Pius|Benedict|Gregory|Leo|Innocent|Clement|Urban|Boniface|Frederick|Philip|Felipe|Ferdinand|Alfonso|Napoleon|Mary|Catherine|Nicholas|Alexander|Peter|Ivan|Gustav|Gustavus|Carl|Christian|Haakon|Olaf|Harald|Victor Emmanuel|Umberto|Ramesses|Ptolemy|Antiochus|Constantine|Justinian|Otto|Rudolf|Wilhelm|Friedrich|Ludwig|Leopold|Franz|Joseph|Juan Carlos|Manuel|Pedro|Sancho|Robert|David|Malcolm|Stephen|Anne|Victoria|Edmund|Harold|Canute|Richard|Sixtus|Eugene|Martin";
/// Words after which a Roman numeral is a plain number ("Chapter IV" → "Chapter four").
const ROMAN_CUES: &str = "Chapter|Chapters|Part|Book|Volume|Vol\\.|Act|Scene|Section|Article|Appendix|Annex|Phase|Round|Episode|Season|Level|Stage|Title|Class|Type|Grade|Psalm|Canto|War|Bowl|Olympiad|Vatican|Mark|Mk\\.?|Generation|Tier|Category|Division|Rocky|Unit|Form|Schedule|Step|Lesson";

/// Initialisms said letter by letter although they hold vowels (vowel-less capitals are always
/// spelled: "HTML", "SQL").
const SPELLED: &[&str] = &[
    "AI", "API", "APIs", "CEO", "CFO", "CTO", "CIA", "FBI", "EU", "UK", "USA", "UN", "UI", "UX",
    "ID", "IDs", "IBM", "IOU", "ETA", "FAQ", "AWS", "SDK", "IDE", "OS", "CPU", "GPU", "USB", "UFO",
    "BMW", "IRS", "EPA", "IPO", "ISP", "UAE", "ATM", "HIV", "NBA", "NFL", "NHL", "MLB", "BBC",
    "ASAP", "IQ", "EV", "PE", "PR", "HR", "IT", "QA", "VIP", "PIN", "OTP", "SEO", "UTC", "GMT",
    "EST", "PST", "ETL", "CI", "CD", "TV", "RSVP", "US",
];

/// Below one thousand.
fn hundreds(n: u128, gb: bool, out: &mut Vec<String>) {
    debug_assert!(n < 1000);
    let rest = n % 100;
    if n >= 100 {
        out.push(ONES[(n / 100) as usize].to_owned());
        out.push("hundred".to_owned());
        if gb && rest != 0 {
            out.push("and".to_owned());
        }
    }
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

const SCALES: [(u128, &str); 6] = [
    (1_000_000_000_000_000_000, "quintillion"),
    (1_000_000_000_000_000, "quadrillion"),
    (1_000_000_000_000, "trillion"),
    (1_000_000_000, "billion"),
    (1_000_000, "million"),
    (1_000, "thousand"),
];

/// A cardinal below 10^21 in words; en-gb puts "and" before the last part below a hundred
/// ("one thousand and five", "one hundred and one").
fn cardinal_in(n: u128, gb: bool) -> String {
    debug_assert!(n < 1_000_000_000_000_000_000_000);
    if n == 0 {
        return "zero".to_owned();
    }
    let mut out = Vec::new();
    let mut rest = n;
    for (scale, name) in SCALES {
        if rest >= scale {
            hundreds(rest / scale, gb, &mut out);
            out.push(name.to_owned());
            rest %= scale;
        }
    }
    if gb && !out.is_empty() && rest > 0 && rest < 100 {
        out.push("and".to_owned());
    }
    hundreds(rest, gb, &mut out);
    out.join(" ")
}

/// A cardinal number in words (en-us): 1234 → "one thousand two hundred thirty-four".
pub fn cardinal(n: u64) -> String {
    cardinal_in(u128::from(n), false)
}

fn ordinal_of(words: String) -> String {
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

/// An ordinal in words: 21 → "twenty-first".
pub fn ordinal(n: u64) -> String {
    ordinal_of(cardinal(n))
}

fn ordinal_in(n: u128, gb: bool) -> String {
    ordinal_of(cardinal_in(n, gb))
}

/// A year as said: 2026 → "twenty twenty-six", 1900 → "nineteen hundred", 2005 → "two thousand
/// five", 1905 → "nineteen oh five".
pub fn year(n: u64) -> String {
    year_in(n, false)
}

fn year_in(n: u64, gb: bool) -> String {
    let (high, low) = (n / 100, n % 100);
    if !(1000..10_000).contains(&n) || (n % 1000 < 10 && high % 10 == 0) {
        return cardinal_in(u128::from(n), gb);
    }
    match low {
        0 => format!("{} hundred", cardinal(high)),
        1..=9 => format!("{} oh {}", cardinal(high), cardinal(low)),
        _ => format!("{} {}", cardinal(high), cardinal(low)),
    }
}

/// The value of the digits of `s` (separators skipped); `None` past `u128`.
fn value(s: &str) -> Option<u128> {
    s.chars()
        .filter(char::is_ascii_digit)
        .try_fold(0u128, |n, d| {
            n.checked_mul(10)?.checked_add(u128::from(d as u8 - b'0'))
        })
}

/// A small value (a day, an hour, a count of digits already bounded by its pattern).
fn small(s: &str) -> u64 {
    value(s).map_or(u64::MAX, |v| u64::try_from(v).unwrap_or(u64::MAX))
}

/// Each digit of `s` as a word ("0042" → "zero zero four two"); others characters dropped.
fn digit_words(s: &str, zero: &str) -> String {
    s.chars()
        .filter(char::is_ascii_digit)
        .map(|d| match d {
            '0' => zero,
            d => ONES[usize::from(d as u8 - b'0')],
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A long run of digits read one by one, a comma every three digits ("one two three, four five
/// six, seven"), so that a listener can follow it.
fn digit_groups(s: &str) -> String {
    let digits: Vec<char> = s.chars().filter(char::is_ascii_digit).collect();
    digits
        .chunks(3)
        .map(|c| digit_words(&c.iter().collect::<String>(), "zero"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// An integer as written: an amount when it can be one (no leading zero, at most
/// [`MAX_PLAIN_DIGITS`] digits, or [`MAX_GROUPED_DIGITS`] with thousands separators), otherwise
/// its digits one by one.
fn integer(int: &str, d: Dialect) -> String {
    let grouped = int.contains(',');
    let count = int.chars().filter(char::is_ascii_digit).count();
    let leading_zero = int.len() > 1 && int.starts_with('0');
    let limit = if grouped {
        MAX_GROUPED_DIGITS
    } else {
        MAX_PLAIN_DIGITS
    };
    if leading_zero && !grouped && count <= MAX_PLAIN_DIGITS {
        return digit_words(int, "zero");
    }
    if leading_zero || count > limit {
        return if grouped {
            int.split(',')
                .map(|g| digit_words(g, "zero"))
                .collect::<Vec<_>>()
                .join(", ")
        } else {
            digit_groups(int)
        };
    }
    match value(int) {
        Some(v) => cardinal_in(v, d.gb),
        None => digit_groups(int),
    }
}

/// "3.14" → "three point one four"; "1,000" → "one thousand".
fn number(int: &str, frac: Option<&str>, d: Dialect) -> String {
    let mut words = integer(int, d);
    if let Some(frac) = frac.filter(|f| !f.is_empty()) {
        words.push_str(" point ");
        words.push_str(&digit_words(frac, "zero"));
    }
    words
}

fn plural_in(int: &str, one: &str, many: &str, d: Dialect) -> String {
    let words = integer(int, d);
    let unit = if words == "one" { one } else { many };
    format!("{words} {unit}")
}

macro_rules! pattern {
    ($name:ident, $re:expr) => {
        static $name: LazyLock<Regex> = LazyLock::new(|| Regex::new($re).expect(stringify!($name)));
    };
}

pattern!(
    URL,
    r"(?i)\b(?:https?://|www\.)[^\s<>\x22]*[^\s<>\x22.,;:!?)\]']|\b[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*\.(?:com|org|net|io|dev|ai|app|edu|gov|co\.uk|org\.uk|co|uk|de|fr|es|it|eu)\b(?:/[^\s<>\x22]*[^\s<>\x22.,;:!?)\]'])?"
);
pattern!(EMAIL, r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b");
pattern!(SHARP, r"\b([A-Z])#(^|[^\w#]|$)");
pattern!(PLUS_PLUS, r"\b([A-Z])\+\+");
pattern!(DOT_NET, r"(^|\s)\.NET\b");
pattern!(
    PHONE_INTL,
    r"\+(\d{1,3})((?:[ .-]?\(?\d{1,5}\)?){1,6})(^|[^\w]|$)"
);
pattern!(
    PHONE_NATIONAL,
    r"(^|[^\w(-])(?:(1)[ .-])?(?:\((\d{3})\)\s?|(\d{3})[ .-])(\d{3})[ .-](\d{4})\b"
);
pattern!(PHONE_LOCAL, r"(^|[^\w-])(\d{3})-(\d{4})\b");
pattern!(
    PHONE_UK,
    r"(^|[^\w])(0\d{2,4})[ -](\d{3,8})(?:[ -](\d{3,4}))?\b"
);
pattern!(
    ID_GROUPS,
    r"\b\d{2,6}(?:-\d{2,6}){2,}\b|\b\d{4}(?: \d{4}){2,}\b"
);
pattern!(NUMBER_SIGN, r"(?:\bNo\.|#)\s?(\d)");
pattern!(
    CURRENCY,
    r"(-)?([$£€¥₹])\s?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?:\s*(thousand|million|billion|trillion)\b|\s?(k|K|m|M|mn|bn|b|B|BN|tn|T)\b)?"
);
pattern!(
    CURRENCY_CODE,
    r"\b(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?\s?(USD|EUR|GBP|JPY|INR|CHF|CAD|AUD)\b"
);
pattern!(CENTS, r"\b(\d+)\s?¢");
pattern!(ISO_DATE, r"\b(\d{4})-(\d{2})-(\d{2})\b");
pattern!(SLASH_DATE, r"\b(\d{1,2})([/.])(\d{1,2})[/.](\d{4})\b");
const MONTH_ALTERNATIVES: &str = "January|February|March|April|May|June|July|August|September|October|November|December|Jan\\.?|Feb\\.?|Mar\\.|Apr\\.?|Jun\\.|Jul\\.|Aug\\.?|Sept?\\.?|Oct\\.?|Nov\\.?|Dec\\.?";
static MONTH_DAY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"\b({MONTH_ALTERNATIVES}) (\d{{1,2}})(?:st|nd|rd|th)?\b(,? (\d{{4}})\b)?"
    ))
    .expect("month pattern")
});
static DAY_MONTH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"\b(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?({MONTH_ALTERNATIVES})(,? (\d{{4}})\b)?"
    ))
    .expect("day month pattern")
});
pattern!(
    TIME,
    r"\b(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\s*([AaPp])(?:\.|\s)?[Mm]\b\.?)?"
);
// British style writes "3.45pm": a time only with am/pm (else "3.45" is a decimal).
pattern!(
    DOT_TIME,
    r"\b(\d{1,2})\.(\d{2})(\s*([AaPp])(?:\.|\s)?[Mm]\b\.?)"
);
pattern!(HOUR_HALF, r"\b(\d{1,2})\s?([AaPp])\.?[Mm]\b\.?");
pattern!(RATIO, r"(^|[^\w:])(\d+):(\d+)\b");
pattern!(
    MIXED_FRACTION,
    r"(^|[^\w/.,])(\d+) (\d{1,2})/(\d{1,3})($|[^\w/])"
);
pattern!(FRACTION, r"(^|[^\w/.,])(\d+)/(\d+)($|[^\w/])");
pattern!(
    RANGE,
    r"(^|[^\w.,-])(\d+(?:\.\d+)?)(?:-|\s?–\s?)(\d+(?:\.\d+)?)\b"
);
pattern!(ORDINAL, r"\b(\d+)(st|nd|rd|th)\b");
pattern!(
    PERCENT,
    r"(^|[^\w.])(-)?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?\s?%"
);
static UNIT: LazyLock<Regex> = LazyLock::new(|| {
    let mut names: Vec<&str> = UNITS.iter().map(|(u, _, _)| *u).collect();
    names.sort_by_key(|u| std::cmp::Reverse(u.len()));
    let alternatives = names
        .iter()
        .map(|u| regex::escape(u))
        .collect::<Vec<_>>()
        .join("|");
    Regex::new(&format!(
        r"(^|[^\w.])(-)?(\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.(\d+))?\s?({alternatives})(?:$|[^\w°/²³])"
    ))
    .expect("unit pattern")
});
static REGNAL_NUMERAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"\b({REGNAL}) ([IVXL]+)\b( [a-z']+)?")).expect("regnal pattern")
});
static CUED_NUMERAL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!(r"\b({ROMAN_CUES}) ([IVXL]+)\b")).expect("roman pattern"));
pattern!(DECADE, r"(^|[\s(])'?([2-9])0s\b");
pattern!(YEAR, r"\b(1\d\d\d|20\d\d)(s?)\b( [a-z]+)?");
pattern!(VERSION, r"(^|[^\w.])(v)?(\d+(?:\.\d+){2,})\b");
pattern!(IP, r"(^|[^\w.])(\d{1,3}(?:\.\d{1,3}){3})\b");
pattern!(PLUS_SIGN, r"(^|\s)\+(\d)");
pattern!(LEADING_POINT, r"(^|[\s(])\.(\d+)\b");
pattern!(
    NUMBER,
    r"(^|[^\w.])(-)?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?\b"
);
pattern!(DIGIT_LETTERS, r"(^|[^\w.])(\d{1,4})([A-Z]{1,2})\b");
pattern!(CAPITALS, r"\b([A-Z]{2,5})(s?)\b");
pattern!(HASHTAG, r"(^|\s)#([A-Za-z]\w*)");
pattern!(AT_HANDLE, r"(^|\s)@(\w+)");
pattern!(MATH, r"(\s|\d)([+=×÷])(\s|\d)");
static ABBREVIATION: LazyLock<Regex> = LazyLock::new(|| {
    let alternatives = ABBREVIATIONS
        .iter()
        .map(|(a, _)| regex::escape(a))
        .collect::<Vec<_>>()
        .join("|");
    Regex::new(&format!(r"(^|[^\w.])({alternatives})")).expect("abbreviation pattern")
});
// British style writes titles without the full stop: "Dr Smith", "Mrs Jones".
pattern!(TITLE, r"\b(Dr|Mr|Mrs|Ms|Prof) ([A-Z])");

fn month_name(abbreviated: &str) -> &'static str {
    let key = &abbreviated[..3];
    MONTHS
        .iter()
        .find(|m| m.starts_with(key))
        .copied()
        .unwrap_or("")
}

/// A date as said: month first "November twenty-third, twenty twenty-six", or day first "the
/// twenty-third of November, twenty twenty-six" (`day_first`: en-gb, or written that way).
fn date(month: u64, day: u64, y: Option<u64>, day_first: bool, d: Dialect) -> Option<String> {
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let name = MONTHS[(month - 1) as usize];
    let mut said = if day_first {
        format!("the {} of {name}", ordinal(day))
    } else {
        format!("{name} {}", ordinal(day))
    };
    if let Some(y) = y {
        said.push_str(", ");
        said.push_str(&year_in(y, d.gb));
    }
    Some(said)
}

/// A URL or an address read the way people read one: the scheme left out, "dot", "slash",
/// "at", digits one by one ("example dot com slash docs").
fn read_address(address: &str) -> String {
    let lower = address.to_ascii_lowercase();
    let rest = ["https://", "http://"]
        .iter()
        .find_map(|s| lower.strip_prefix(s).map(|_| &address[s.len()..]))
        .unwrap_or(address);
    let rest = rest.trim_end_matches('/');
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let flush = |word: &mut String, words: &mut Vec<String>| {
        if !word.is_empty() {
            if word.eq_ignore_ascii_case("www") {
                words.push("w w w".to_owned());
            } else {
                words.push(std::mem::take(word));
            }
            word.clear();
        }
    };
    for c in rest.chars() {
        let said = match c {
            '.' => "dot",
            '/' => "slash",
            '-' => "dash",
            '_' => "underscore",
            ':' => "colon",
            '?' => "question mark",
            '=' => "equals",
            '&' => "and",
            '#' => "hash",
            '~' => "tilde",
            '%' => "percent",
            '+' => "plus",
            '@' => "at",
            c if c.is_ascii_digit() => ONES[usize::from(c as u8 - b'0')],
            c => {
                word.push(c);
                continue;
            }
        };
        flush(&mut word, &mut words);
        words.push(said.to_owned());
    }
    flush(&mut word, &mut words);
    words.join(" ")
}

/// A Roman numeral's value, when `s` is one written the standard way (1 to 3999).
fn roman(s: &str) -> Option<u64> {
    let value = |c| match c {
        'I' => Some(1),
        'V' => Some(5),
        'X' => Some(10),
        'L' => Some(50),
        'C' => Some(100),
        'D' => Some(500),
        'M' => Some(1000),
        _ => None,
    };
    let digits: Vec<u64> = s.chars().map(value).collect::<Option<_>>()?;
    let mut total = 0;
    for (i, &v) in digits.iter().enumerate() {
        if digits.get(i + 1).is_some_and(|&next| next > v) {
            total -= v as i64;
        } else {
            total += v as i64;
        }
    }
    let total = u64::try_from(total)
        .ok()
        .filter(|t| (1..4000).contains(t))?;
    // Only the canonical spelling ("IIII" or "IC" are not numerals here).
    (to_roman(total) == s).then_some(total)
}

fn to_roman(mut n: u64) -> String {
    const TABLE: [(u64, &str); 13] = [
        (1000, "M"),
        (900, "CM"),
        (500, "D"),
        (400, "CD"),
        (100, "C"),
        (90, "XC"),
        (50, "L"),
        (40, "XL"),
        (10, "X"),
        (9, "IX"),
        (5, "V"),
        (4, "IV"),
        (1, "I"),
    ];
    let mut out = String::new();
    for (v, s) in TABLE {
        while n >= v {
            out.push_str(s);
            n -= v;
        }
    }
    out
}

/// The denominator of a fraction as said: 2 → "half"/"halves", 4 → "quarter", others ordinal.
fn denominator(n: u64, plural: bool) -> String {
    match (n, plural) {
        (2, false) => "half".to_owned(),
        (2, true) => "halves".to_owned(),
        (4, false) => "quarter".to_owned(),
        (4, true) => "quarters".to_owned(),
        (n, false) => ordinal(n),
        (n, true) => format!("{}s", ordinal(n)),
    }
}

/// "3/4" → "three quarters": a proper fraction with a denominator up to 100 is said as one,
/// others "x over y" ("22/7" → "twenty-two over seven").
fn fraction(num: &str, den: &str, d: Dialect) -> Option<String> {
    let (n, m) = (small(num), small(den));
    if m == 0 || num.starts_with('0') || den.starts_with('0') {
        return None;
    }
    if n < m && m <= 100 {
        return Some(format!("{} {}", integer(num, d), denominator(m, n != 1)));
    }
    Some(format!("{} over {}", integer(num, d), integer(den, d)))
}

/// Four digits from 1100 to 2099: read as a year where the context allows.
fn is_year(s: &str) -> bool {
    s.len() == 4 && (1100..2100).contains(&small(s))
}

/// Words people say that are not the plural of a counted thing after a year-like number.
const NOT_COUNTED: &[&str] = &[
    "was", "is", "has", "as", "its", "this", "his", "us", "always", "perhaps", "does", "seems",
    "comes", "goes", "brings", "marks", "sees", "saw",
];
/// Counted things whose plural does not end in s.
const IRREGULAR_PLURALS: &[&str] = &["people", "men", "women", "children", "feet", "mice"];

/// Writes numbers, dates, times, currency, addresses, symbols and abbreviations of English
/// `text` out as words (en-us).
pub fn english(text: &str) -> String {
    normalize(text, Dialect { gb: false })
}

/// [`english`] in either dialect.
pub fn normalize(text: &str, d: Dialect) -> String {
    let text = text.replace(['\u{2019}', '\u{2018}'], "'");
    let text = EMAIL.replace_all(&text, |c: &Captures<'_>| read_address(&c[0]));
    let text = URL.replace_all(&text, |c: &Captures<'_>| read_address(&c[0]));
    let text = text.replace("AT&T", "A T and T");
    let text = SHARP.replace_all(&text, "$1 sharp$2");
    let text = PLUS_PLUS.replace_all(&text, "$1 plus plus");
    let text = DOT_NET.replace_all(&text, "${1}dot net");
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
    // Phone numbers: digits one by one, grouped as written.
    let zero = if d.gb { "oh" } else { "zero" };
    let groups = |parts: &[&str]| {
        parts
            .iter()
            .filter(|p| p.chars().any(|c| c.is_ascii_digit()))
            .map(|p| digit_words(p, zero))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let text = PHONE_INTL.replace_all(&text, |c: &Captures<'_>| {
        let all = format!("{}{}", &c[1], &c[2]);
        if all.chars().filter(char::is_ascii_digit).count() < 7 {
            return c[0].to_owned();
        }
        if c[2].starts_with(|ch: char| ch.is_ascii_digit()) {
            // No grouping written: the digits one by one.
            return format!("plus {}{}", digit_words(&all, zero), &c[3]);
        }
        let parts: Vec<&str> = c[2]
            .split([' ', '.', '-', '(', ')'])
            .filter(|p| !p.is_empty())
            .collect();
        format!(
            "plus {}, {}{}",
            digit_words(&c[1], zero),
            groups(&parts),
            &c[3]
        )
    });
    let text = PHONE_NATIONAL.replace_all(&text, |c: &Captures<'_>| {
        let trunk = c.get(2).map_or("", |m| m.as_str());
        let area = c.get(3).or(c.get(4)).map_or("", |m| m.as_str());
        format!("{}{}", &c[1], groups(&[trunk, area, &c[5], &c[6]]))
    });
    let text = ISO_DATE.replace_all(&text, |c: &Captures<'_>| {
        date(small(&c[2]), small(&c[3]), Some(small(&c[1])), d.gb, d)
            .unwrap_or_else(|| c[0].to_owned())
    });
    let text = PHONE_LOCAL.replace_all(&text, |c: &Captures<'_>| {
        if c[2].ends_with("00") && c[3].ends_with("00") {
            // "100-1000": a range.
            return c[0].to_owned();
        }
        format!("{}{}", &c[1], groups(&[&c[2], &c[3]]))
    });
    let text = PHONE_UK.replace_all(&text, |c: &Captures<'_>| {
        let last = c.get(4).map_or("", |m| m.as_str());
        format!("{}{}", &c[1], groups(&[&c[2], &c[3], last]))
    });
    // Dates with slashes: month first in en-us, day first in en-gb (and whenever the first
    // number cannot be a month); with dots, always day first.
    let text = SLASH_DATE.replace_all(&text, |c: &Captures<'_>| {
        let (a, b, y) = (small(&c[1]), small(&c[3]), small(&c[4]));
        let day_first = d.gb || &c[2] == ".";
        let (month, day) = if day_first { (b, a) } else { (a, b) };
        // The other order when the usual one cannot be a date ("25/12/2026" in en-us).
        let (month, day) = if month > 12 {
            (day, month)
        } else {
            (month, day)
        };
        date(month, day, Some(y), d.gb, d).unwrap_or_else(|| c[0].to_owned())
    });
    let text = ID_GROUPS.replace_all(&text, |c: &Captures<'_>| {
        if c[0].contains(' ') && c[0].split(' ').count() != 4 {
            // Four-digit numbers separated by spaces are a card's number only four at a time;
            // a longer run is a list of numbers.
            return c[0].to_owned();
        }
        c[0].split(['-', ' '])
            .map(|g| digit_words(g, "zero"))
            .collect::<Vec<_>>()
            .join(", ")
    });
    let text = NUMBER_SIGN.replace_all(&text, "number $1");
    let text = CURRENCY.replace_all(&text, |c: &Captures<'_>| {
        let sign = if c.get(1).is_some() { "minus " } else { "" };
        let (one, many, cent_one, cent_many) = match &c[2] {
            "£" => ("pound", "pounds", "penny", "pence"),
            "€" => ("euro", "euros", "cent", "cents"),
            "¥" => ("yen", "yen", "sen", "sen"),
            "₹" => ("rupee", "rupees", "paisa", "paise"),
            _ => ("dollar", "dollars", "cent", "cents"),
        };
        let frac = c.get(4).map(|m| m.as_str());
        let scale = c.get(5).map(|m| m.as_str()).or_else(|| {
            c.get(6).map(|m| match m.as_str() {
                "k" | "K" => "thousand",
                "m" | "M" | "mn" => "million",
                "b" | "B" | "bn" | "BN" => "billion",
                _ => "trillion",
            })
        });
        if let Some(scale) = scale {
            // "$2.5 million", "$1.5M" → "two point five million dollars"
            return format!("{sign}{} {scale} {many}", number(&c[3], frac, d));
        }
        let whole = &c[3];
        match frac {
            Some(f) if f.len() <= 2 && !f.is_empty() => {
                let cents = if f.len() == 1 {
                    small(f) * 10
                } else {
                    small(f)
                };
                let cents_said = cardinal(cents);
                let cent_unit = if cents == 1 { cent_one } else { cent_many };
                if cents == 0 {
                    format!("{sign}{}", plural_in(whole, one, many, d))
                } else if value(whole) == Some(0) {
                    format!("{sign}{cents_said} {cent_unit}")
                } else {
                    format!("{sign}{} {cents_said}", plural_in(whole, one, many, d))
                }
            }
            Some(f) => format!("{sign}{} {many}", number(whole, Some(f), d)),
            None => format!("{sign}{}", plural_in(whole, one, many, d)),
        }
    });
    let text = CURRENCY_CODE.replace_all(&text, |c: &Captures<'_>| {
        let (one, many) = match &c[3] {
            "USD" => ("US dollar", "US dollars"),
            "EUR" => ("euro", "euros"),
            "GBP" => ("pound sterling", "pounds sterling"),
            "JPY" => ("yen", "yen"),
            "INR" => ("rupee", "rupees"),
            "CHF" => ("Swiss franc", "Swiss francs"),
            "CAD" => ("Canadian dollar", "Canadian dollars"),
            _ => ("Australian dollar", "Australian dollars"),
        };
        match c.get(2) {
            Some(f) => format!("{} {many}", number(&c[1], Some(f.as_str()), d)),
            None => plural_in(&c[1], one, many, d),
        }
    });
    let text = CENTS.replace_all(&text, |c: &Captures<'_>| {
        plural_in(&c[1], "cent", "cents", d)
    });
    let text = MONTH_DAY.replace_all(&text, |c: &Captures<'_>| {
        let day = small(&c[2]);
        let month = MONTHS
            .iter()
            .position(|m| *m == month_name(&c[1]))
            .map_or(0, |i| i as u64 + 1);
        let y = c.get(4).map(|m| small(m.as_str()));
        match date(month, day, y, false, d) {
            Some(said) => said,
            None => c[0].to_owned(),
        }
    });
    let text = DAY_MONTH.replace_all(&text, |c: &Captures<'_>| {
        let day = small(&c[1]);
        let month = MONTHS
            .iter()
            .position(|m| *m == month_name(&c[2]))
            .map_or(0, |i| i as u64 + 1);
        let y = c.get(4).map(|m| small(m.as_str()));
        match date(month, day, y, true, d) {
            Some(said) => said,
            None => c[0].to_owned(),
        }
    });
    let text = DOT_TIME.replace_all(&text, |c: &Captures<'_>| {
        format!("{}:{}{}", &c[1], &c[2], &c[3])
    });
    let text = TIME.replace_all(&text, |c: &Captures<'_>| {
        let (h, m) = (small(&c[1]), small(&c[2]));
        let seconds = c.get(3).map(|s| small(s.as_str()));
        let half = c.get(4);
        if h > 24 || m > 59 || seconds.is_some_and(|s| s > 59) || (half.is_some() && h > 12) {
            return c[0].to_owned();
        }
        let mut said = if h == 0 && m == 0 && half.is_none() && seconds.is_none() {
            "midnight".to_owned()
        } else {
            cardinal(h)
        };
        match m {
            _ if said == "midnight" => {}
            0 if half.is_none() && h > 12 => said.push_str(" hundred"),
            0 if half.is_none() => said.push_str(" o'clock"),
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
        if let Some(s) = seconds {
            said.push_str(" and ");
            said.push_str(&plural_in(&s.to_string(), "second", "seconds", d));
        }
        if let Some(half) = half {
            said.push_str(if half.as_str().eq_ignore_ascii_case("a") {
                " a m"
            } else {
                " p m"
            });
        }
        said
    });
    let text = HOUR_HALF.replace_all(&text, |c: &Captures<'_>| {
        let h = small(&c[1]);
        if !(1..=12).contains(&h) {
            return c[0].to_owned();
        }
        let half = if c[2].eq_ignore_ascii_case("a") {
            "a m"
        } else {
            "p m"
        };
        format!("{} {half}", cardinal(h))
    });
    let text = RATIO.replace_all(&text, |c: &Captures<'_>| {
        format!("{}{} to {}", &c[1], integer(&c[2], d), integer(&c[3], d))
    });
    let text = text
        .replace("24/7", "twenty-four seven")
        .replace("9/11", "nine eleven")
        .replace("50/50", "fifty-fifty");
    let text = MIXED_FRACTION.replace_all(&text, |c: &Captures<'_>| {
        let (num, den) = (small(&c[3]), small(&c[4]));
        if den == 0 || num >= den {
            return c[0].to_owned();
        }
        let part = if num == 1 && (2..=10).contains(&den) {
            format!("a {}", denominator(den, false))
        } else {
            match fraction(&c[3], &c[4], d) {
                Some(f) => f,
                None => return c[0].to_owned(),
            }
        };
        format!("{}{} and {part}{}", &c[1], integer(&c[2], d), &c[5])
    });
    let text = FRACTION.replace_all(&text, |c: &Captures<'_>| {
        let (a, b) = (small(&c[2]), small(&c[3]));
        // A month and a day no fraction is written with ("on 3/15"): a date.
        if (1..=12).contains(&a)
            && (13..=31).contains(&b)
            && !matches!(b, 16 | 20 | 25)
            && let Some(said) = date(a, b, None, d.gb, d)
        {
            return format!("{}{said}{}", &c[1], &c[4]);
        }
        match fraction(&c[2], &c[3], d) {
            Some(said) => format!("{}{said}{}", &c[1], &c[4]),
            None => c[0].to_owned(),
        }
    });
    let text = text
        .replace('½', " one half")
        .replace('¼', " one quarter")
        .replace('¾', " three quarters")
        .replace('⅓', " one third")
        .replace('⅔', " two thirds");
    let text = RANGE.replace_all(&text, |c: &Captures<'_>| {
        let years = is_year(&c[2]) && (is_year(&c[3]) || c[3].len() == 2);
        let side = |s: &str| {
            if years && s.len() == 4 {
                return year_in(small(s), d.gb);
            }
            let (i, f) = s.split_once('.').map_or((s, None), |(i, f)| (i, Some(f)));
            number(i, f, d)
        };
        format!("{}{} to {}", &c[1], side(&c[2]), side(&c[3]))
    });
    let text = ORDINAL.replace_all(&text, |c: &Captures<'_>| match value(&c[1]) {
        Some(v) if c[1].len() <= MAX_PLAIN_DIGITS && !c[1].starts_with('0') => ordinal_in(v, d.gb),
        _ => c[0].to_owned(),
    });
    let text = PERCENT.replace_all(&text, |c: &Captures<'_>| {
        let sign = if c.get(2).is_some() { "minus " } else { "" };
        format!(
            "{}{sign}{} percent",
            &c[1],
            number(&c[3], c.get(4).map(|m| m.as_str()), d)
        )
    });
    let text = UNIT.replace_all(&text, |c: &Captures<'_>| {
        let (_, one, many) = UNITS
            .iter()
            .find(|(u, _, _)| *u == &c[5])
            .expect("matched a unit");
        let said = number(&c[3], c.get(4).map(|m| m.as_str()), d);
        let sign = if c.get(2).is_some() { "minus " } else { "" };
        let unit = if said == "one" { *one } else { *many };
        let unit = if d.gb {
            unit.replace("meter", "metre").replace("liter", "litre")
        } else {
            unit.to_owned()
        };
        let tail = &c[0][c.get(5).map_or(0, |m| m.end() - c.get(0).unwrap().start())..];
        format!("{}{sign}{said} {unit}{tail}", &c[1])
    });
    let text = REGNAL_NUMERAL.replace_all(&text, |c: &Captures<'_>| {
        let next = c.get(3).map_or("", |m| m.as_str());
        // "George I think": a lone "I" before a word is the pronoun, unless the word is one a
        // regnal number is often followed by.
        let pronoun = &c[2] == "I"
            && !next.is_empty()
            && !matches!(
                next.trim(),
                "was" | "had" | "of" | "and" | "died" | "became" | "reigned"
            );
        match roman(&c[2]) {
            Some(n) if !pronoun => {
                let o = ordinal(n);
                let mut chars = o.chars();
                let first: String = chars
                    .next()
                    .map_or(String::new(), |f| f.to_uppercase().collect());
                format!("{} the {first}{}{next}", &c[1], chars.as_str())
            }
            _ => c[0].to_owned(),
        }
    });
    let text = CUED_NUMERAL.replace_all(&text, |c: &Captures<'_>| match roman(&c[2]) {
        Some(n) => format!("{} {}", &c[1], cardinal_in(u128::from(n), d.gb)),
        None => c[0].to_owned(),
    });
    let text = DECADE.replace_all(&text, |c: &Captures<'_>| {
        let tens = TENS[usize::from(c[2].as_bytes()[0] - b'0')];
        format!("{}{}ies", &c[1], &tens[..tens.len() - 1])
    });
    let text = YEAR.replace_all(&text, |c: &Captures<'_>| {
        let next = c.get(3).map_or("", |m| m.as_str());
        let word = next.trim();
        let counted = c[2].is_empty()
            && !word.is_empty()
            && ((word.len() > 2
                && word.ends_with('s')
                && !word.ends_with("ss")
                && !NOT_COUNTED.contains(&word))
                || IRREGULAR_PLURALS.contains(&word));
        if counted {
            // "2026 units": an amount.
            return format!("{}{next}", integer(&c[1], d));
        }
        let said = year_in(small(&c[1]), d.gb);
        let said = if c[2].is_empty() {
            said
        } else if let Some(stem) = said.strip_suffix('y') {
            // "1990s" → "nineteen nineties"
            format!("{stem}ies")
        } else {
            format!("{said}s")
        };
        format!("{said}{next}")
    });
    let text = IP.replace_all(&text, |c: &Captures<'_>| {
        let parts: Vec<String> = c[2].split('.').map(|p| digit_words(p, "zero")).collect();
        format!("{}{}", &c[1], parts.join(" dot "))
    });
    let text = PLUS_SIGN.replace_all(&text, "${1}plus $2");
    let text = VERSION.replace_all(&text, |c: &Captures<'_>| {
        let parts: Vec<String> = c[3].split('.').map(|p| integer(p, d)).collect();
        let v = if c.get(2).is_some() { "version " } else { "" };
        format!("{}{v}{}", &c[1], parts.join(" point "))
    });
    let text = LEADING_POINT.replace_all(&text, |c: &Captures<'_>| {
        format!("{}point {}", &c[1], digit_words(&c[2], "zero"))
    });
    let text = DIGIT_LETTERS.replace_all(&text, |c: &Captures<'_>| {
        format!("{}{} {}", &c[1], integer(&c[2], d), &c[3])
    });
    let text = NUMBER.replace_all(&text, |c: &Captures<'_>| {
        let sign = if c.get(2).is_some() { "minus " } else { "" };
        format!(
            "{}{sign}{}",
            &c[1],
            number(&c[3], c.get(4).map(|m| m.as_str()), d)
        )
    });
    let text = CAPITALS.replace_all(&text, |c: &Captures<'_>| {
        let word = &c[1];
        let vowelless = !word.contains(['A', 'E', 'I', 'O', 'U', 'Y']) && roman(word).is_none();
        let whole = format!("{word}{}", &c[2]);
        if !(vowelless || SPELLED.contains(&word) || SPELLED.contains(&whole.as_str())) {
            return whole;
        }
        let letters = word.chars().map(String::from).collect::<Vec<_>>().join(" ");
        if c[2].is_empty() {
            letters
        } else {
            format!("{letters}'s")
        }
    });
    let text = HASHTAG.replace_all(&text, "${1}hashtag $2");
    let text = AT_HANDLE.replace_all(&text, "${1}at $2");
    let text = MATH.replace_all(&text, |c: &Captures<'_>| {
        let said = match &c[2] {
            "+" => "plus",
            "=" => "equals",
            "×" => "times",
            _ => "divided by",
        };
        format!("{} {said} {}", &c[1], &c[3])
    });
    let text = text.replace('&', " and ").replace(" @ ", " at ");
    text.split(' ')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
