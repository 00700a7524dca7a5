//! Page bounds of the capture list, the same through every door (REST's query string, the
//! agent's `list_captures`).

/// One bounded integer of a page: its name, range and default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageBound {
    pub name: &'static str,
    pub min: i64,
    pub max: i64,
    pub default: i64,
}

impl PageBound {
    /// The value, or the default when absent; a value out of range is refused.
    pub fn check(self, value: Option<i64>) -> Result<i64, String> {
        match value {
            None => Ok(self.default),
            Some(n) if (self.min..=self.max).contains(&n) => Ok(n),
            Some(_) => Err(self.refusal()),
        }
    }

    /// The refusal of a value out of range or not an integer at all.
    pub fn refusal(self) -> String {
        format!(
            "{} must be an integer from {} to {}",
            self.name, self.min, self.max
        )
    }
}

/// A page of a list: `limit` 1 to 200 (default 50), `offset` 0 to 2^53 − 1 (JSON's exact range).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    limit: i64,
    offset: i64,
}

impl Page {
    pub const LIMIT: PageBound = PageBound {
        name: "limit",
        min: 1,
        max: 200,
        default: 50,
    };
    pub const OFFSET: PageBound = PageBound {
        name: "offset",
        min: 0,
        max: 9_007_199_254_740_991,
        default: 0,
    };

    /// Checks `limit` then `offset`; the error names the field at fault.
    pub fn new(limit: Option<i64>, offset: Option<i64>) -> Result<Self, (&'static str, String)> {
        let limit = Self::LIMIT
            .check(limit)
            .map_err(|m| (Self::LIMIT.name, m))?;
        let offset = Self::OFFSET
            .check(offset)
            .map_err(|m| (Self::OFFSET.name, m))?;
        Ok(Self { limit, offset })
    }

    pub fn limit(self) -> i64 {
        self.limit
    }

    pub fn offset(self) -> i64 {
        self.offset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_and_defaults() {
        let page = Page::new(None, None).unwrap();
        assert_eq!((page.limit(), page.offset()), (50, 0));
        assert_eq!(
            Page::new(Some(200), Some(9_007_199_254_740_991))
                .unwrap()
                .limit(),
            200
        );
        assert_eq!(
            Page::new(Some(0), Some(-1)).unwrap_err(),
            ("limit", "limit must be an integer from 1 to 200".to_owned())
        );
        assert_eq!(
            Page::new(Some(1), Some(-1)).unwrap_err(),
            (
                "offset",
                "offset must be an integer from 0 to 9007199254740991".to_owned()
            )
        );
    }
}
