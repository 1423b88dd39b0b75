//! Tunables by name and value, exactly as `/sys/block/<dev>/queue/iosched/<name>` shows them:
//! integers in the unit the kernel uses for that file (usually milliseconds).

/// The static description of one integer tunable.
#[derive(Clone, Copy, Debug)]
pub struct TunableSpec {
    pub name: &'static str,
    /// Unit of the sysfs value, e.g. "ms", "requests", "bool".
    pub unit: &'static str,
    pub default: u64,
    pub min: u64,
    pub max: u64,
    pub description: &'static str,
}

impl TunableSpec {
    /// Parses `value` as sysfs would accept it and checks the range.
    pub fn parse(&self, scheduler: &str, value: &str) -> Result<u64, TunableError> {
        let parsed: u64 = value.trim().parse().map_err(|_| TunableError::Invalid {
            scheduler: scheduler.to_string(),
            name: self.name.to_string(),
            value: value.to_string(),
            expected: format!("an integer in {}..={} ({})", self.min, self.max, self.unit),
        })?;
        if parsed < self.min || parsed > self.max {
            return Err(TunableError::Invalid {
                scheduler: scheduler.to_string(),
                name: self.name.to_string(),
                value: value.to_string(),
                expected: format!("an integer in {}..={} ({})", self.min, self.max, self.unit),
            });
        }
        Ok(parsed)
    }

    pub fn info(&self, value: u64) -> TunableInfo {
        TunableInfo {
            name: self.name.to_string(),
            value: value.to_string(),
            unit: self.unit.to_string(),
            default: self.default.to_string(),
            range: format!("{}..={}", self.min, self.max),
            description: self.description.to_string(),
        }
    }
}

/// One tunable with its current value, for listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TunableInfo {
    pub name: String,
    pub value: String,
    pub unit: String,
    pub default: String,
    pub range: String,
    pub description: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TunableError {
    Unknown { scheduler: String, name: String, known: Vec<String> },
    Invalid { scheduler: String, name: String, value: String, expected: String },
}

impl TunableError {
    pub fn unknown(scheduler: &str, name: &str, known: &[TunableInfo]) -> TunableError {
        TunableError::Unknown {
            scheduler: scheduler.to_string(),
            name: name.to_string(),
            known: known.iter().map(|t| t.name.clone()).collect(),
        }
    }
}

impl std::fmt::Display for TunableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TunableError::Unknown { scheduler, name, known } if known.is_empty() => {
                write!(f, "scheduler `{scheduler}` has no tunable `{name}` (it has no tunables)")
            }
            TunableError::Unknown { scheduler, name, known } => write!(
                f,
                "scheduler `{scheduler}` has no tunable `{name}`; its tunables are: {}",
                known.join(", ")
            ),
            TunableError::Invalid { scheduler, name, value, expected } => {
                write!(
                    f,
                    "{scheduler} tunable `{name}`: `{value}` is not valid, expected {expected}"
                )
            }
        }
    }
}

impl std::error::Error for TunableError {}
