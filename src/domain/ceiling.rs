//! A key's monthly ceiling: whole minutes of generated audio, stored as PostgreSQL INTEGER.

use std::fmt;
use std::str::FromStr;

/// Whole minutes, 0 to `i32::MAX` (the column is INTEGER). Every door (console forms, the CLI)
/// parses through this type; each keeps its own wording for the two ways a value is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CeilingMinutes(i32);

/// Why a ceiling is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CeilingError {
    /// Not a whole, non-negative number of minutes.
    NotWholeMinutes,
    /// Whole minutes, but more than the column holds.
    TooLarge,
}

impl CeilingMinutes {
    pub fn new(minutes: u32) -> Result<Self, CeilingError> {
        i32::try_from(minutes)
            .map(Self)
            .map_err(|_| CeilingError::TooLarge)
    }

    pub fn get(self) -> i32 {
        self.0
    }
}

impl FromStr for CeilingMinutes {
    type Err = CeilingError;

    /// Decimal whole minutes, exactly as written (callers trim form input first).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let minutes = s
            .parse::<u32>()
            .map_err(|_| CeilingError::NotWholeMinutes)?;
        Self::new(minutes)
    }
}

impl fmt::Display for CeilingMinutes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_minutes_that_fit_an_integer_column() {
        assert_eq!("0".parse::<CeilingMinutes>().unwrap().get(), 0);
        assert_eq!("60".parse::<CeilingMinutes>().unwrap().get(), 60);
        assert_eq!(
            "2147483647".parse::<CeilingMinutes>().unwrap().get(),
            i32::MAX
        );
        assert_eq!(
            "2147483648".parse::<CeilingMinutes>(),
            Err(CeilingError::TooLarge)
        );
        assert_eq!(CeilingMinutes::new(u32::MAX), Err(CeilingError::TooLarge));
        for bad in ["", "-1", "1.5", "ten", " 5", "99999999999"] {
            assert!(bad.parse::<CeilingMinutes>().is_err(), "{bad:?}");
        }
        assert_eq!(
            "ten".parse::<CeilingMinutes>(),
            Err(CeilingError::NotWholeMinutes)
        );
    }
}
