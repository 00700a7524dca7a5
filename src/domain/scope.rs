use std::fmt;
use std::str::FromStr;

/// A permission carried by an API key (spec §5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    VoiceRead,
    VoiceGenerate,
}

impl Scope {
    pub const ALL: [Scope; 2] = [Scope::VoiceRead, Scope::VoiceGenerate];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::VoiceRead => "voice:read",
            Scope::VoiceGenerate => "voice:generate",
        }
    }

    /// Parses a comma-separated list such as `voice:read,voice:generate`; duplicates collapse.
    pub fn parse_list(list: &str) -> Result<Vec<Scope>, String> {
        let mut scopes = Vec::new();
        for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let scope: Scope = part.parse()?;
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        if scopes.is_empty() {
            return Err("at least one scope is required (voice:read, voice:generate)".into());
        }
        Ok(scopes)
    }
}

impl FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scope::ALL
            .into_iter()
            .find(|scope| scope.as_str() == s)
            .ok_or_else(|| format!("unknown scope {s:?} (expected voice:read or voice:generate)"))
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists() {
        assert_eq!(
            Scope::parse_list("voice:read, voice:generate,voice:read").unwrap(),
            vec![Scope::VoiceRead, Scope::VoiceGenerate]
        );
        assert!(Scope::parse_list("").is_err());
        assert!(Scope::parse_list("voice:admin").is_err());
    }
}
