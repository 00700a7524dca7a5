//! What counts as an email address, for every door that creates or names an account (the
//! console's sign-up, the CLI, OAuth's sign-in through the console).

use std::fmt;

/// Longest address accepted (RFC 5321's path limit less the brackets).
pub const MAX_EMAIL_CHARS: usize = 254;

/// A trimmed address with a non-empty local part, an `@`, a domain with a dot and no spaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email(String);

impl Email {
    /// The message every door shows for an address this refuses.
    pub const INVALID: &'static str = "Enter an email address such as ada@example.com.";

    pub fn parse(raw: &str) -> Result<Self, &'static str> {
        let email = raw.trim();
        let ok = email.len() <= MAX_EMAIL_CHARS
            && !email.contains(char::is_whitespace)
            && email
                .split_once('@')
                .is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.'));
        if ok {
            Ok(Self(email.to_owned()))
        } else {
            Err(Self::INVALID)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(
            Email::parse(" ada@example.com ").unwrap().as_str(),
            "ada@example.com"
        );
        for bad in [
            "",
            "ada",
            "@example.com",
            "ada@localhost",
            "a da@example.com",
        ] {
            assert_eq!(Email::parse(bad), Err(Email::INVALID), "{bad}");
        }
        let long = format!("{}@example.com", "a".repeat(MAX_EMAIL_CHARS));
        assert!(Email::parse(&long).is_err());
    }
}
