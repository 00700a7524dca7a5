//! Texts that speak much longer than their characters suggest, for the admission estimate
//! (issue 23 item 7): emoji read by name, ordinals, long numbers, fractions, currency, dates,
//! abbreviations, and plain prose to compare with. Generated (no randomness), so that the test
//! (`tests/engines/estimate.rs`) and the calibration (`cargo run --example calibrate_estimate`) read the
//! same corpus. A text of emoji alone is not here: it has no letters, and admission refuses it
//! as unreadable before any estimate.

/// One text of the corpus.
pub struct Case {
    pub category: &'static str,
    pub text: String,
}

/// A deterministic sequence of numbers in `range` (a linear congruential generator).
fn numbers(count: usize, low: u64, high: u64) -> Vec<u64> {
    let mut state: u64 = 0x5eed;
    (0..count)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            low + (state >> 33) % (high - low + 1)
        })
        .collect()
}

fn ordinal_suffix(n: u64) -> &'static str {
    match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

fn join(items: impl IntoIterator<Item = String>) -> String {
    items.into_iter().collect::<Vec<_>>().join(" ")
}

/// The corpus, in the order of the table in docs/benchmarks.md.
pub fn adversarial() -> Vec<Case> {
    const EMOJI: [&str; 16] = [
        "😀", "🎉", "👍", "🚀", "🔥", "🙏", "🎁", "🎂", "🌧", "🐶", "🍕", "⚽", "🎸", "📚", "💡",
        "🌍",
    ];
    let months = ["January", "March", "July", "October", "December"];
    vec![
        Case {
            category: "one word",
            text: "Hi.".to_owned(),
        },
        Case {
            category: "one short sentence",
            text: "Hello there, how are you today?".to_owned(),
        },
        Case {
            category: "plain prose",
            text: "The meeting starts early in the morning. Please bring the report, the slides, \
                   and a list of open questions for the team. Once upon a time, in a small \
                   village by the sea, there lived an old fisherman who told stories every \
                   evening, and the children gathered around him while the sun went down \
                   slowly behind the hills."
                .to_owned(),
        },
        Case {
            category: "plain prose, one long unpunctuated run",
            text: "and on and on the road went through the hills and over the rivers past the \
                   farms and the quiet villages where nobody had seen a stranger for years"
                .repeat(2),
        },
        Case {
            category: "emoji between words",
            text: join((0..16).map(|i| format!("thanks {}", EMOJI[i]))),
        },
        Case {
            category: "ordinals (\"1th 2th …\")",
            text: join((1..=30).map(|n| format!("{n}th"))),
        },
        Case {
            category: "ordinals (\"21st 22nd …\")",
            text: join((121..=135).map(|n| format!("{n}{}", ordinal_suffix(n)))),
        },
        Case {
            category: "four-digit numbers",
            text: join(numbers(15, 1000, 9999).into_iter().map(|n| n.to_string())),
        },
        Case {
            category: "long numbers with separators",
            text: join(numbers(5, 1_000_000, 999_999_999).into_iter().map(|n| {
                let digits = n.to_string();
                let mut out = String::new();
                for (i, c) in digits.chars().enumerate() {
                    if i > 0 && (digits.len() - i) % 3 == 0 {
                        out.push(',');
                    }
                    out.push(c);
                }
                out
            })),
        },
        Case {
            category: "decimals",
            text: join(
                numbers(8, 10_000, 99_999_999)
                    .into_iter()
                    .map(|n| format!("{}.{}", n % 1000, n)),
            ),
        },
        Case {
            category: "fractions",
            text: join(
                numbers(15, 1, 99)
                    .into_iter()
                    .zip(numbers(15, 100, 199))
                    .map(|(a, b)| format!("{a}/{}", b % 64 + 2)),
            ),
        },
        Case {
            category: "currency",
            text: join(
                numbers(10, 100, 9_999_999)
                    .into_iter()
                    .enumerate()
                    .map(|(i, n)| {
                        let sign = ["$", "£", "€"][i % 3];
                        format!("{sign}{}.{:02}", n / 100, n % 100)
                    }),
            ),
        },
        Case {
            category: "dates",
            text: join(numbers(8, 1, 28).into_iter().enumerate().map(|(i, d)| {
                let year = 1900 + (d * 37 % 126);
                match i % 3 {
                    0 => format!("{}/{:02}/{year}", d % 12 + 1, d),
                    1 => format!("{year}-{:02}-{:02}", d % 12 + 1, d),
                    _ => format!("{} {d}, {year}", months[i % months.len()]),
                }
            })),
        },
        Case {
            category: "times and percentages",
            text: join(
                numbers(10, 0, 2359)
                    .into_iter()
                    .map(|n| format!("{}:{:02} {}%", n / 100 % 24, n % 60, n % 100)),
            ),
        },
        Case {
            category: "abbreviations and acronyms",
            text: "Dr. Smith, Mr. Jones and Prof. Lee met Sgt. Brown at St. Paul's on Main Ave. \
                   near Mt. Hood with Capt. Reed, Lt. Gray and Gov. Hale of the Dept. of \
                   Energy; the NASA, FBI, CIA, UNESCO, NATO and IBM people came approx. at \
                   noon with Rep. Cole, Sen. Ward and Gen. Park of Acme Corp. and Beta Inc."
                .to_owned(),
        },
        Case {
            category: "symbols and units",
            text: "5 kg + 3 km = 8? No: 12 cm × 4 m² ≈ 0.48 m³, 100 °C, 3 ft 2 in, 60 mph, \
                   2 GB, 1.5 TB, 20 mg/ml, #1, #42, A&B, x^2, 50 % off, § 3, © 2024, ™, ½ ¼ ¾"
                .to_owned(),
        },
    ]
}
