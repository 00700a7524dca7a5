//! The tables under `cases/`: one case a line, `input<TAB>expected` (and for English an en-gb
//! column where it differs from en-us). `# ` starts a comment line. A tab in an input is written
//! `\t`.

use super::*;

/// Runs every case of `table` through `normalize`, collecting failures.
fn check(table: &str, column: usize, normalize: impl Fn(&str) -> String) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut count = 0;
    for (number, line) in table.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with("# ") {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        assert!(fields.len() >= 2, "line {}: {line:?}", number + 1);
        let input = fields[0].replace("\\t", "\t");
        let expected = fields
            .get(column)
            .filter(|f| !f.is_empty())
            .unwrap_or(&fields[1]);
        count += 1;
        let got = normalize(&input);
        if got != *expected {
            failures.push(format!(
                "line {}: {input:?} → {got:?}, expected {expected:?}",
                number + 1
            ));
        }
    }
    (count, failures)
}

#[test]
fn english_table() {
    let table = include_str!("cases/en.tsv");
    let (us, mut failures) = check(table, 1, |t| for_voice(t, "en-us"));
    let (gb, gb_failures) = check(table, 2, |t| for_voice(t, "en-gb"));
    failures.extend(gb_failures.into_iter().map(|f| format!("en-gb {f}")));
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(us >= 300 && gb >= 300, "{us} cases");
}

#[test]
fn words() {
    assert_eq!(cardinal(999), "nine hundred ninety-nine");
    assert_eq!(cardinal(1_000_001), "one million one");
    assert_eq!(
        cardinal(u64::MAX),
        "eighteen quintillion four hundred forty-six quadrillion seven hundred forty-four trillion seventy-three billion seven hundred nine million five hundred fifty-one thousand six hundred fifteen"
    );
    assert_eq!(ordinal(40), "fortieth");
    assert_eq!(ordinal(1003), "one thousand third");
    assert_eq!(year(2010), "twenty ten");
    assert_eq!(year(1066), "ten sixty-six");
}

#[test]
fn long_digit_runs_are_read_digit_by_digit_never_saturated() {
    for n in [20, 60, 300] {
        let said = english(&"7".repeat(n));
        assert_eq!(said.matches("seven").count(), n, "{n} digits: {said}");
        assert!(!said.contains("quintillion"));
    }
    let said = english("Order 123456789012345678901234567890 shipped.");
    assert!(
        said.starts_with("Order one two three, four five six"),
        "{said}"
    );
}

#[test]
fn other_languages_are_left_as_written() {
    assert_eq!(for_voice("Es ist 12:30 Uhr.", "de"), "Es ist 12:30 Uhr.");
    assert_eq!(for_voice("2026年", "ja"), "2026年");
}

#[test]
fn romance_tables() {
    let tables = [
        ("es", include_str!("cases/es.tsv"), 1, "es"),
        ("fr", include_str!("cases/fr.tsv"), 1, "fr-fr"),
        ("it", include_str!("cases/it.tsv"), 1, "it"),
        ("pt-br", include_str!("cases/pt.tsv"), 1, "pt-br"),
        ("pt", include_str!("cases/pt.tsv"), 2, "pt"),
    ];
    let mut failures = Vec::new();
    for (name, table, column, voice) in tables {
        let (count, f) = check(table, column, |t| for_voice(t, voice));
        assert!(count >= 40, "{name}: {count} cases");
        failures.extend(f.into_iter().map(|f| format!("{name} {f}")));
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
