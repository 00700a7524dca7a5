//! Spanish, French, Italian and Portuguese: numbers, decimals, dates, times, currency and
//! percentages written out as words (docs/speech-text.md; tables `cases/{es,fr,it,pt}.tsv`).
//! espeak-ng reads digits in these languages itself, but saturates long numbers and reads the
//! decimal comma, "14h30" and "5 €" as written; so they are written out here, with the same
//! rule as English for numbers that cannot be amounts (read digit by digit).

use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::english::{MAX_GROUPED_DIGITS, MAX_PLAIN_DIGITS};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    Spanish,
    French,
    Italian,
    /// European Portuguese (long scale: "mil milhões", "bilião").
    Portuguese,
    /// Brazilian Portuguese ("bilhão", "dezesseis").
    Brazilian,
}

use Language::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Gender {
    Masculine,
    Feminine,
}

use Gender::*;

fn es_unit(n: u128, g: Gender, apocope: bool) -> &'static str {
    const W: [&str; 20] = [
        "cero",
        "uno",
        "dos",
        "tres",
        "cuatro",
        "cinco",
        "seis",
        "siete",
        "ocho",
        "nueve",
        "diez",
        "once",
        "doce",
        "trece",
        "catorce",
        "quince",
        "dieciséis",
        "diecisiete",
        "dieciocho",
        "diecinueve",
    ];
    match (n, g, apocope) {
        (1, Feminine, _) => "una",
        (1, _, true) => "un",
        (n, _, _) => W[n as usize],
    }
}

fn es_below_100(n: u128, g: Gender, apocope: bool) -> String {
    const TENS: [&str; 10] = [
        "",
        "",
        "veinte",
        "treinta",
        "cuarenta",
        "cincuenta",
        "sesenta",
        "setenta",
        "ochenta",
        "noventa",
    ];
    const TWENTIES: [&str; 10] = [
        "veinte",
        "veintiuno",
        "veintidós",
        "veintitrés",
        "veinticuatro",
        "veinticinco",
        "veintiséis",
        "veintisiete",
        "veintiocho",
        "veintinueve",
    ];
    match n {
        0..=19 => es_unit(n, g, apocope).to_owned(),
        21 if g == Feminine => "veintiuna".to_owned(),
        21 if apocope => "veintiún".to_owned(),
        20..=29 => TWENTIES[(n - 20) as usize].to_owned(),
        _ if n.is_multiple_of(10) => TENS[(n / 10) as usize].to_owned(),
        _ => format!(
            "{} y {}",
            TENS[(n / 10) as usize],
            es_unit(n % 10, g, apocope)
        ),
    }
}

fn es_below_1000(n: u128, g: Gender, apocope: bool) -> String {
    const HUNDREDS: [&str; 10] = [
        "",
        "ciento",
        "doscientos",
        "trescientos",
        "cuatrocientos",
        "quinientos",
        "seiscientos",
        "setecientos",
        "ochocientos",
        "novecientos",
    ];
    let (h, r) = (n / 100, n % 100);
    let head = match h {
        0 => return es_below_100(r, g, apocope),
        1 if r == 0 => return "cien".to_owned(),
        1 => "ciento".to_owned(),
        h if g == Feminine => HUNDREDS[h as usize].replace("tos", "tas"),
        h => HUNDREDS[h as usize].to_owned(),
    };
    if r == 0 {
        head
    } else {
        format!("{head} {}", es_below_100(r, g, apocope))
    }
}

fn es_below_million(n: u128, g: Gender, apocope: bool) -> String {
    let (t, r) = (n / 1000, n % 1000);
    let thousands = match t {
        0 => return es_below_1000(r, g, apocope),
        1 => "mil".to_owned(),
        t => format!("{} mil", es_below_1000(t, g, true)),
    };
    if r == 0 {
        thousands
    } else {
        format!("{thousands} {}", es_below_1000(r, g, apocope))
    }
}

fn es_cardinal(n: u128, g: Gender, apocope: bool) -> String {
    if n == 0 {
        return "cero".to_owned();
    }
    let scales = [
        (1_000_000_000_000_000_000u128, "trillón", "trillones"),
        (1_000_000_000_000, "billón", "billones"),
        (1_000_000, "millón", "millones"),
    ];
    let mut parts = Vec::new();
    let mut rest = n;
    for (scale, one, many) in scales {
        let q = rest / scale;
        rest %= scale;
        match q {
            0 => {}
            1 => parts.push(format!("un {one}")),
            q => parts.push(format!("{} {many}", es_below_million(q, Masculine, true))),
        }
    }
    if rest > 0 {
        parts.push(es_below_million(rest, g, apocope));
    }
    parts.join(" ")
}

fn fr_unit(n: u128, g: Gender) -> &'static str {
    const W: [&str; 20] = [
        "zéro", "un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf", "dix",
        "onze", "douze", "treize", "quatorze", "quinze", "seize", "dix-sept", "dix-huit",
        "dix-neuf",
    ];
    if n == 1 && g == Feminine {
        "une"
    } else {
        W[n as usize]
    }
}

/// `last`: nothing follows (only then "quatre-vingts" and "deux cents" take their s).
fn fr_below_100(n: u128, g: Gender, last: bool) -> String {
    const TENS: [&str; 7] = [
        "",
        "",
        "vingt",
        "trente",
        "quarante",
        "cinquante",
        "soixante",
    ];
    match n {
        0..=19 => fr_unit(n, g).to_owned(),
        20..=69 => match n % 10 {
            0 => TENS[(n / 10) as usize].to_owned(),
            1 => format!("{} et {}", TENS[(n / 10) as usize], fr_unit(1, g)),
            u => format!("{}-{}", TENS[(n / 10) as usize], fr_unit(u, g)),
        },
        71 => "soixante et onze".to_owned(),
        70..=79 => format!("soixante-{}", fr_unit(n - 60, g)),
        80 if last => "quatre-vingts".to_owned(),
        80 => "quatre-vingt".to_owned(),
        _ => format!("quatre-vingt-{}", fr_unit(n - 80, g)),
    }
}

fn fr_below_1000(n: u128, g: Gender, last: bool) -> String {
    let (h, r) = (n / 100, n % 100);
    let head = match h {
        0 => return fr_below_100(r, g, last),
        1 => "cent".to_owned(),
        h if r == 0 && last => format!("{} cents", fr_unit(h, Masculine)),
        h => format!("{} cent", fr_unit(h, Masculine)),
    };
    if r == 0 {
        head
    } else {
        format!("{head} {}", fr_below_100(r, g, last))
    }
}

fn fr_cardinal(n: u128, g: Gender) -> String {
    if n == 0 {
        return "zéro".to_owned();
    }
    let scales = [
        (1_000_000_000_000_000_000u128, "trillion"),
        (1_000_000_000_000_000, "billiard"),
        (1_000_000_000_000, "billion"),
        (1_000_000_000, "milliard"),
        (1_000_000, "million"),
    ];
    let mut parts = Vec::new();
    let mut rest = n;
    for (scale, name) in scales {
        let q = rest / scale;
        rest %= scale;
        match q {
            0 => {}
            1 => parts.push(format!("un {name}")),
            q => parts.push(format!("{} {name}s", fr_below_1000(q, Masculine, true))),
        }
    }
    let (t, r) = (rest / 1000, rest % 1000);
    match t {
        0 => {}
        1 => parts.push("mille".to_owned()),
        t => parts.push(format!("{} mille", fr_below_1000(t, Masculine, false))),
    }
    if r > 0 {
        parts.push(fr_below_1000(r, g, true));
    }
    parts.join(" ")
}

fn it_below_100(n: u128, g: Gender) -> String {
    const W: [&str; 20] = [
        "zero",
        "uno",
        "due",
        "tre",
        "quattro",
        "cinque",
        "sei",
        "sette",
        "otto",
        "nove",
        "dieci",
        "undici",
        "dodici",
        "tredici",
        "quattordici",
        "quindici",
        "sedici",
        "diciassette",
        "diciotto",
        "diciannove",
    ];
    const TENS: [&str; 10] = [
        "",
        "",
        "venti",
        "trenta",
        "quaranta",
        "cinquanta",
        "sessanta",
        "settanta",
        "ottanta",
        "novanta",
    ];
    if n == 1 && g == Feminine {
        return "una".to_owned();
    }
    if n < 20 {
        return W[n as usize].to_owned();
    }
    let tens = TENS[(n / 10) as usize];
    match n % 10 {
        0 => tens.to_owned(),
        // "ventuno", "ventotto": the vowel elides.
        1 | 8 => format!("{}{}", &tens[..tens.len() - 1], W[(n % 10) as usize]),
        3 => format!("{tens}tré"),
        u => format!("{tens}{}", W[u as usize]),
    }
}

fn it_below_1000(n: u128, g: Gender) -> String {
    let (h, r) = (n / 100, n % 100);
    let head = match h {
        0 => return it_below_100(r, g),
        1 => "cento".to_owned(),
        h => format!("{}cento", it_below_100(h, Masculine)),
    };
    if r == 0 {
        return head;
    }
    let rest = it_below_100(r, g);
    // "centotto", "centottanta".
    if rest.starts_with('o') {
        format!("{}{rest}", &head[..head.len() - 1])
    } else {
        format!("{head}{rest}")
    }
}

fn it_cardinal(n: u128, g: Gender) -> String {
    if n == 0 {
        return "zero".to_owned();
    }
    let scales = [
        (1_000_000_000_000_000_000u128, "trilione", "trilioni"),
        (1_000_000_000_000_000, "biliardo", "biliardi"),
        (1_000_000_000_000, "bilione", "bilioni"),
        (1_000_000_000, "miliardo", "miliardi"),
        (1_000_000, "milione", "milioni"),
    ];
    let mut parts = Vec::new();
    let mut rest = n;
    for (scale, one, many) in scales {
        let q = rest / scale;
        rest %= scale;
        match q {
            0 => {}
            1 => parts.push(format!("un {one}")),
            q => parts.push(format!("{} {many}", it_below_1000(q, Masculine))),
        }
    }
    let (t, r) = (rest / 1000, rest % 1000);
    let mut tail = match t {
        0 => String::new(),
        1 => "mille".to_owned(),
        t => format!("{}mila", it_below_1000(t, Masculine)),
    };
    if r > 0 {
        tail.push_str(&it_below_1000(r, g));
    }
    if !tail.is_empty() {
        parts.push(tail);
    }
    parts.join(" ")
}

fn pt_below_100(n: u128, g: Gender, brazil: bool) -> String {
    const W: [&str; 20] = [
        "zero",
        "um",
        "dois",
        "três",
        "quatro",
        "cinco",
        "seis",
        "sete",
        "oito",
        "nove",
        "dez",
        "onze",
        "doze",
        "treze",
        "catorze",
        "quinze",
        "dezasseis",
        "dezassete",
        "dezoito",
        "dezanove",
    ];
    const TENS: [&str; 10] = [
        "",
        "",
        "vinte",
        "trinta",
        "quarenta",
        "cinquenta",
        "sessenta",
        "setenta",
        "oitenta",
        "noventa",
    ];
    let unit = |u: u128| -> &'static str {
        match (u, g, brazil) {
            (1, Feminine, _) => "uma",
            (2, Feminine, _) => "duas",
            (14, _, true) => "quatorze",
            (16, _, true) => "dezesseis",
            (17, _, true) => "dezessete",
            (19, _, true) => "dezenove",
            (u, _, _) => W[u as usize],
        }
    };
    if n < 20 {
        return unit(n).to_owned();
    }
    let tens = TENS[(n / 10) as usize];
    match n % 10 {
        0 => tens.to_owned(),
        u => format!("{tens} e {}", unit(u)),
    }
}

fn pt_below_1000(n: u128, g: Gender, brazil: bool) -> String {
    const HUNDREDS: [&str; 10] = [
        "",
        "cento",
        "duzentos",
        "trezentos",
        "quatrocentos",
        "quinhentos",
        "seiscentos",
        "setecentos",
        "oitocentos",
        "novecentos",
    ];
    let (h, r) = (n / 100, n % 100);
    let head = match h {
        0 => return pt_below_100(r, g, brazil),
        1 if r == 0 => return "cem".to_owned(),
        1 => "cento".to_owned(),
        h if g == Feminine => HUNDREDS[h as usize].replace("tos", "tas"),
        h => HUNDREDS[h as usize].to_owned(),
    };
    if r == 0 {
        head
    } else {
        format!("{head} e {}", pt_below_100(r, g, brazil))
    }
}

fn pt_cardinal(n: u128, g: Gender, brazil: bool) -> String {
    if n == 0 {
        return "zero".to_owned();
    }
    // Names of each power of a thousand from 10^6 up, singular and plural.
    let names: [(&str, &str); 5] = if brazil {
        [
            ("milhão", "milhões"),
            ("bilhão", "bilhões"),
            ("trilhão", "trilhões"),
            ("quatrilhão", "quatrilhões"),
            ("quintilhão", "quintilhões"),
        ]
    } else {
        [
            ("milhão", "milhões"),
            ("mil milhões", "mil milhões"),
            ("bilião", "biliões"),
            ("mil biliões", "mil biliões"),
            ("trilião", "triliões"),
        ]
    };
    // Groups of three digits, highest first: (value, words).
    let mut groups: Vec<(u128, String)> = Vec::new();
    for level in (2..=6u32).rev() {
        let q = (n / 1000u128.pow(level)) % 1000;
        if q == 0 {
            continue;
        }
        let (one, many) = names[(level - 2) as usize];
        let words = match (q, one.starts_with("mil ")) {
            // "mil milhões", not "um mil milhões".
            (1, true) => one.to_owned(),
            (1, false) => format!("um {one}"),
            (q, _) => format!("{} {many}", pt_below_1000(q, Masculine, brazil)),
        };
        groups.push((q, words));
    }
    let t = (n / 1000) % 1000;
    match t {
        0 => {}
        1 => groups.push((1, "mil".to_owned())),
        t => groups.push((t, format!("{} mil", pt_below_1000(t, g, brazil)))),
    }
    let r = n % 1000;
    if r > 0 {
        groups.push((r, pt_below_1000(r, g, brazil)));
    }
    let last = groups.len() - 1;
    let mut out = String::new();
    for (i, (value, words)) in groups.iter().enumerate() {
        if i > 0 {
            // "e" before the last group when it is below a hundred or whole hundreds ("mil e
            // quinhentos", "dois mil e vinte e seis"; "mil duzentos e trinta").
            out.push_str(if i == last && (*value < 100 || value % 100 == 0) {
                " e "
            } else {
                " "
            });
        }
        out.push_str(words);
    }
    out
}

fn cardinal(n: u128, g: Gender, l: Language) -> String {
    match l {
        Spanish => es_cardinal(n, g, false),
        French => fr_cardinal(n, g),
        Italian => it_cardinal(n, g),
        Portuguese => pt_cardinal(n, g, false),
        Brazilian => pt_cardinal(n, g, true),
    }
}

/// Before a noun: Spanish "un euro", "veintiún euros"; Italian "un euro".
fn cardinal_before_noun(n: u128, g: Gender, l: Language) -> String {
    match l {
        Spanish => es_cardinal(n, g, true),
        Italian if n == 1 && g == Masculine => "un".to_owned(),
        _ => cardinal(n, g, l),
    }
}

fn digit_words(s: &str, l: Language) -> String {
    s.chars()
        .filter(char::is_ascii_digit)
        .map(|d| cardinal(u128::from(d as u8 - b'0'), Masculine, l))
        .collect::<Vec<_>>()
        .join(" ")
}

/// An integer as written (thousands separated by `.` or a space): an amount up to the same
/// lengths as English, otherwise digit by digit ("0042", long identifiers).
fn integer(int: &str, g: Gender, l: Language, before_noun: bool) -> String {
    let digits: String = int.chars().filter(char::is_ascii_digit).collect();
    let grouped = digits.len() != int.len();
    let limit = if grouped {
        MAX_GROUPED_DIGITS
    } else {
        MAX_PLAIN_DIGITS
    };
    if digits.len() > 1 && digits.starts_with('0') && digits.len() <= MAX_PLAIN_DIGITS {
        return digit_words(&digits, l);
    }
    if digits.len() > limit || digits.starts_with('0') && digits.len() > 1 {
        let chars: Vec<char> = digits.chars().collect();
        return chars
            .chunks(3)
            .map(|c| digit_words(&c.iter().collect::<String>(), l))
            .collect::<Vec<_>>()
            .join(", ");
    }
    let n: u128 = digits.parse().unwrap_or(0);
    if before_noun {
        cardinal_before_noun(n, g, l)
    } else {
        cardinal(n, g, l)
    }
}

/// The decimal separator's name ("coma") and the point's ("punto").
fn separators(l: Language) -> (&'static str, &'static str) {
    match l {
        Spanish => ("coma", "punto"),
        French => ("virgule", "point"),
        Italian => ("virgola", "punto"),
        Portuguese | Brazilian => ("vírgula", "ponto"),
    }
}

/// The fractional digits: as a number when one or two digits without a leading zero ("tres
/// coma catorce"), otherwise one by one.
fn fraction_digits(frac: &str, l: Language) -> String {
    if frac.len() <= 2 && !frac.starts_with('0') {
        cardinal(frac.parse().unwrap_or(0), Masculine, l)
    } else {
        digit_words(frac, l)
    }
}

fn number(int: &str, comma: Option<&str>, point: Option<&str>, l: Language) -> String {
    let mut words = integer(int, Masculine, l, false);
    let (comma_word, point_word) = separators(l);
    if let Some(f) = comma.filter(|f| !f.is_empty()) {
        words = format!("{words} {comma_word} {}", fraction_digits(f, l));
    } else if let Some(f) = point.filter(|f| !f.is_empty()) {
        words = format!("{words} {point_word} {}", fraction_digits(f, l));
    }
    words
}

fn minus(l: Language) -> &'static str {
    match l {
        Spanish | Portuguese | Brazilian => "menos",
        French => "moins",
        Italian => "meno",
    }
}

const MONTHS: [[&str; 12]; 4] = [
    [
        "enero",
        "febrero",
        "marzo",
        "abril",
        "mayo",
        "junio",
        "julio",
        "agosto",
        "septiembre",
        "octubre",
        "noviembre",
        "diciembre",
    ],
    [
        "janvier",
        "février",
        "mars",
        "avril",
        "mai",
        "juin",
        "juillet",
        "août",
        "septembre",
        "octobre",
        "novembre",
        "décembre",
    ],
    [
        "gennaio",
        "febbraio",
        "marzo",
        "aprile",
        "maggio",
        "giugno",
        "luglio",
        "agosto",
        "settembre",
        "ottobre",
        "novembre",
        "dicembre",
    ],
    [
        "janeiro",
        "fevereiro",
        "março",
        "abril",
        "maio",
        "junho",
        "julho",
        "agosto",
        "setembro",
        "outubro",
        "novembro",
        "dezembro",
    ],
];

fn months(l: Language) -> &'static [&'static str; 12] {
    match l {
        Spanish => &MONTHS[0],
        French => &MONTHS[1],
        Italian => &MONTHS[2],
        Portuguese | Brazilian => &MONTHS[3],
    }
}

/// "23/11/2026" → "veintitrés de noviembre de dos mil veintiséis" (the first of the month is
/// "primero", "premier", "primo", "primeiro"; Spanish says "uno").
fn date(day: u64, month: u64, year: Option<u64>, l: Language) -> Option<String> {
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let name = months(l)[(month - 1) as usize];
    let day_words = match (day, l) {
        (1, French) => "premier".to_owned(),
        (1, Italian) => "primo".to_owned(),
        (1, Portuguese | Brazilian) => "primeiro".to_owned(),
        (d, _) => cardinal(u128::from(d), Masculine, l),
    };
    let year_words = year.map(|y| cardinal(u128::from(y), Masculine, l));
    Some(match (l, year_words) {
        (Spanish | Portuguese | Brazilian, Some(y)) => format!("{day_words} de {name} de {y}"),
        (Spanish | Portuguese | Brazilian, None) => format!("{day_words} de {name}"),
        (_, Some(y)) => format!("{day_words} {name} {y}"),
        (_, None) => format!("{day_words} {name}"),
    })
}

/// "07:15", "14h30": Spanish "siete y quince", French "sept heures quinze", Italian "sette e
/// quindici", Portuguese "sete e quinze"; on the hour "en punto", "heures", "in punto",
/// "horas". Hours are feminine ("una", "une", "uma"/"duas").
fn time(h: u64, m: u64, l: Language) -> Option<String> {
    if h > 24 || m > 59 {
        return None;
    }
    let hour = cardinal(u128::from(h), Feminine, l);
    let minutes = cardinal(u128::from(m), Masculine, l);
    Some(match (l, m) {
        (Spanish, 0) => format!("{hour} en punto"),
        (Spanish, _) => format!("{hour} y {minutes}"),
        (French, 0) if h <= 1 => format!("{hour} heure"),
        (French, 0) => format!("{hour} heures"),
        (French, _) if h <= 1 => format!("{hour} heure {minutes}"),
        (French, _) => format!("{hour} heures {minutes}"),
        (Italian, 0) => format!("{hour} in punto"),
        (Italian, _) => format!("{hour} e {minutes}"),
        (_, 0) if h == 1 => format!("{hour} hora"),
        (_, 0) => format!("{hour} horas"),
        (_, _) => format!("{hour} e {minutes}"),
    })
}

/// A currency's unit (singular, plural, gender) and its hundredth (singular, plural).
fn currency(
    symbol: &str,
    l: Language,
) -> (
    (&'static str, &'static str, Gender),
    (&'static str, &'static str),
) {
    match (symbol, l) {
        ("€" | "EUR", Spanish) => (("euro", "euros", Masculine), ("céntimo", "céntimos")),
        ("€" | "EUR", French) => (("euro", "euros", Masculine), ("centime", "centimes")),
        ("€" | "EUR", Italian) => (("euro", "euro", Masculine), ("centesimo", "centesimi")),
        ("€" | "EUR", Portuguese) => (("euro", "euros", Masculine), ("cêntimo", "cêntimos")),
        ("€" | "EUR", _) => (("euro", "euros", Masculine), ("centavo", "centavos")),
        ("£" | "GBP", Spanish) => (("libra", "libras", Feminine), ("penique", "peniques")),
        ("£" | "GBP", French) => (("livre", "livres", Feminine), ("penny", "pence")),
        ("£" | "GBP", Italian) => (("sterlina", "sterline", Feminine), ("penny", "pence")),
        ("£" | "GBP", _) => (("libra", "libras", Feminine), ("pêni", "pence")),
        ("R$" | "BRL", Spanish) => (("real", "reales", Masculine), ("centavo", "centavos")),
        ("R$" | "BRL", French) => (("réal", "réais", Masculine), ("centavo", "centavos")),
        ("R$" | "BRL", _) => (("real", "reais", Masculine), ("centavo", "centavos")),
        (_, Spanish) => (("dólar", "dólares", Masculine), ("centavo", "centavos")),
        (_, French) => (("dollar", "dollars", Masculine), ("cent", "cents")),
        (_, Italian) => (
            ("dollaro", "dollari", Masculine),
            ("centesimo", "centesimi"),
        ),
        (_, _) => (("dólar", "dólares", Masculine), ("centavo", "centavos")),
    }
}

/// The scale nouns after which a currency takes "de" ("un millón de euros").
const SCALE_NOUNS: [&str; 14] = [
    "millón",
    "millones",
    "billón",
    "billones",
    "million",
    "millions",
    "milliard",
    "milliards",
    "milione",
    "milioni",
    "miliardo",
    "miliardi",
    "milhão",
    "milhões",
];

fn money(int: &str, frac: Option<&str>, symbol: &str, sign: bool, l: Language) -> String {
    let ((one, many, g), (cent_one, cent_many)) = currency(symbol, l);
    let whole: u128 = int
        .chars()
        .filter(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or(0);
    let amount = integer(int, g, l, true);
    let unit = if whole == 1 { one } else { many };
    let mut said = if SCALE_NOUNS.iter().any(|s| amount.ends_with(s)) {
        match l {
            French if unit.starts_with(['a', 'e', 'i', 'o', 'u']) => format!("{amount} d'{unit}"),
            French | Spanish | Portuguese | Brazilian => format!("{amount} de {unit}"),
            Italian => format!("{amount} di {unit}"),
        }
    } else {
        format!("{amount} {unit}")
    };
    let cents = frac.filter(|f| !f.is_empty()).map(|f| {
        let f = if f.len() == 1 {
            format!("{f}0")
        } else {
            f.to_owned()
        };
        f.parse::<u128>().unwrap_or(0)
    });
    match (frac, cents) {
        (Some(f), _) if f.len() > 2 => {
            let (comma, _) = separators(l);
            said = format!(
                "{} {comma} {} {many}",
                integer(int, Masculine, l, false),
                digit_words(f, l)
            );
        }
        (_, Some(c)) if c > 0 => {
            let cent_words = cardinal_before_noun(c, Masculine, l);
            let cent_unit = if c == 1 { cent_one } else { cent_many };
            said = match (whole, l) {
                (0, _) => format!("{cent_words} {cent_unit}"),
                (_, Spanish) => format!("{said} con {cent_words} {cent_unit}"),
                (_, French) => format!("{said} {cent_words}"),
                (_, Italian) => format!("{said} e {cent_words}"),
                (_, _) => format!("{said} e {cent_words} {cent_unit}"),
            };
        }
        _ => {}
    }
    if sign {
        format!("{} {said}", minus(l))
    } else {
        said
    }
}

macro_rules! pattern {
    ($name:ident, $re:expr) => {
        static $name: LazyLock<Regex> = LazyLock::new(|| Regex::new($re).expect(stringify!($name)));
    };
}

/// An amount: thousands grouped by `.` or a (narrow) no-break space, or plain digits; then a
/// decimal comma, or a decimal point before one or two digits.
const AMOUNT: &str = r"(\d{1,3}(?:[.\u{a0}\u{202f}]\d{3})+|\d+)(?:,(\d+)|\.(\d{1,2})\b)?";

static CURRENCY_BEFORE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"(^|[^\w])(-)?(R\$|US\$|[$€£])\s?{AMOUNT}")).expect("currency before")
});
static CURRENCY_AFTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(^|[^\w.,])(-)?{AMOUNT}\s?(R\$|[$€£]|EUR\b|USD\b|GBP\b|BRL\b)"
    ))
    .expect("currency after")
});
static PERCENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!(r"(^|[^\w.,])(-)?{AMOUNT}\s?%")).expect("percent"));
static NUMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!(r"(^|[^\w.,])(-)?{AMOUNT}\b")).expect("number"));
pattern!(ISO_DATE, r"\b(\d{4})-(\d{2})-(\d{2})\b");
pattern!(DATE, r"\b(\d{1,2})[/.](\d{1,2})[/.](\d{4})\b");
pattern!(TIME, r"\b(\d{1,2})(?::|\s?h\s?)(\d{2})\b(?:\s?h\b)?");
pattern!(HOUR, r"\b(\d{1,2})\s?h\b");
pattern!(ORDINAL, r"\b(\d{1,2})(\.?º|\.?ª|(?:ème|er|re|e)\b)");

fn ordinal(n: u64, feminine: bool, l: Language) -> Option<String> {
    const ES: [&str; 10] = [
        "primero", "segundo", "tercero", "cuarto", "quinto", "sexto", "séptimo", "octavo",
        "noveno", "décimo",
    ];
    const IT: [&str; 10] = [
        "primo", "secondo", "terzo", "quarto", "quinto", "sesto", "settimo", "ottavo", "nono",
        "decimo",
    ];
    const PT: [&str; 10] = [
        "primeiro", "segundo", "terceiro", "quarto", "quinto", "sexto", "sétimo", "oitavo", "nono",
        "décimo",
    ];
    const FR: [&str; 10] = [
        "premier",
        "deuxième",
        "troisième",
        "quatrième",
        "cinquième",
        "sixième",
        "septième",
        "huitième",
        "neuvième",
        "dixième",
    ];
    if !(1..=10).contains(&n) {
        return None;
    }
    let i = (n - 1) as usize;
    let word = match l {
        Spanish => ES[i],
        Italian => IT[i],
        Portuguese | Brazilian => PT[i],
        French if n == 1 && feminine => return Some("première".to_owned()),
        French => FR[i],
    };
    Some(if feminine && l != French {
        format!("{}a", &word[..word.len() - 1])
    } else {
        word.to_owned()
    })
}

/// Writes the numbers, dates, times, currency and percentages of `text` out in `l`.
pub fn normalize(text: &str, l: Language) -> String {
    let text = ISO_DATE.replace_all(text, |c: &Captures<'_>| {
        let (y, m, d) = (
            c[1].parse().unwrap_or(0),
            c[2].parse().unwrap_or(0),
            c[3].parse().unwrap_or(0),
        );
        date(d, m, Some(y), l).unwrap_or_else(|| c[0].to_owned())
    });
    let text = DATE.replace_all(&text, |c: &Captures<'_>| {
        let (d, m, y) = (
            c[1].parse().unwrap_or(0),
            c[2].parse().unwrap_or(0),
            c[3].parse().unwrap_or(0),
        );
        date(d, m, Some(y), l).unwrap_or_else(|| c[0].to_owned())
    });
    let text = TIME.replace_all(&text, |c: &Captures<'_>| {
        time(c[1].parse().unwrap_or(99), c[2].parse().unwrap_or(99), l)
            .unwrap_or_else(|| c[0].to_owned())
    });
    let text = HOUR.replace_all(&text, |c: &Captures<'_>| {
        time(c[1].parse().unwrap_or(99), 0, l)
            .map(|t| t.replace(" en punto", " horas").replace(" in punto", ""))
            .unwrap_or_else(|| c[0].to_owned())
    });
    let text = CURRENCY_BEFORE.replace_all(&text, |c: &Captures<'_>| {
        let frac = c.get(5).or(c.get(6)).map(|m| m.as_str());
        format!(
            "{}{}",
            &c[1],
            money(&c[4], frac, &c[3], c.get(2).is_some(), l)
        )
    });
    let text = CURRENCY_AFTER.replace_all(&text, |c: &Captures<'_>| {
        let frac = c.get(4).or(c.get(5)).map(|m| m.as_str());
        format!(
            "{}{}",
            &c[1],
            money(&c[3], frac, &c[6], c.get(2).is_some(), l)
        )
    });
    let text = PERCENT.replace_all(&text, |c: &Captures<'_>| {
        let sign = if c.get(2).is_some() {
            format!("{} ", minus(l))
        } else {
            String::new()
        };
        let words = number(
            &c[3],
            c.get(4).map(|m| m.as_str()),
            c.get(5).map(|m| m.as_str()),
            l,
        );
        let percent = match l {
            Spanish => "por ciento",
            French => "pour cent",
            Italian => "per cento",
            Portuguese | Brazilian => "por cento",
        };
        format!("{}{sign}{words} {percent}", &c[1])
    });
    let text = ORDINAL.replace_all(&text, |c: &Captures<'_>| {
        let suffix = &c[2];
        let feminine = suffix.contains('ª') || suffix == "re";
        let fits = match l {
            French => matches!(suffix, "er" | "re" | "e" | "ème"),
            _ => suffix.contains(['º', 'ª']),
        };
        match ordinal(c[1].parse().unwrap_or(0), feminine, l) {
            Some(o) if fits => o,
            _ => c[0].to_owned(),
        }
    });
    let text = NUMBER.replace_all(&text, |c: &Captures<'_>| {
        let sign = if c.get(2).is_some() {
            format!("{} ", minus(l))
        } else {
            String::new()
        };
        let words = number(
            &c[3],
            c.get(4).map(|m| m.as_str()),
            c.get(5).map(|m| m.as_str()),
            l,
        );
        format!("{}{sign}{words}", &c[1])
    });
    text.split(' ')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
