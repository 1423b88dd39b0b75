//! fio's number syntax: sizes with k/m/g/t/p/e prefixes (and fio's `kb_base` twist), times
//! with us/ms/s/m/h/d suffixes, percentages, 0/1 booleans and `read,write,trim` lists.
//!
//! Kept apart from the option table so every option that takes a size or a time reads it the
//! same way fio does. Errors are plain strings saying what was expected; the caller adds the
//! file, line and option.

use crate::job::Amount;

/// Parses an unsigned integer with an optional size suffix, as fio does for every integer
/// option: `4k`, `1MiB`, `0x1000`, `512b`.
///
/// With `kb_base=1024` (fio's default) the SI-looking prefixes (`k`, `kb`, `m` ...) are powers
/// of 1024 and the IEC ones (`kib`, `mib` ...) powers of 1000; `kb_base=1000` swaps that back.
/// Fractions are rejected (fio silently truncates them at the dot).
pub fn parse_size(text: &str, kb_base: u64) -> Result<u64, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("a number was expected, got nothing".into());
    }
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).map_err(|_| format!("`{s}` is not a hex number"));
    }
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, suffix) = s.split_at(digits_end);
    if digits.is_empty() {
        return Err(format!("`{s}` is not a number (expected e.g. 4096, 4k, 1m, 2g)"));
    }
    if suffix.starts_with('.') {
        return Err(format!("`{s}`: a whole number is expected (e.g. 1536k, not 1.5m)"));
    }
    let value: u64 = digits.parse().map_err(|_| format!("`{s}` is too large"))?;
    let mult = size_multiplier(suffix, kb_base).ok_or_else(|| {
        format!("`{s}` has an unknown size suffix `{suffix}` (expected k, m, g, t, p, e, optionally followed by b or ib)")
    })?;
    value.checked_mul(mult).ok_or_else(|| format!("`{s}` is too large"))
}

/// The multiplier of a size suffix, or `None` if fio would not recognise it.
fn size_multiplier(suffix: &str, kb_base: u64) -> Option<u64> {
    let lower = suffix.to_ascii_lowercase();
    if lower.is_empty() || lower == "b" {
        return Some(1);
    }
    let mut chars = lower.chars();
    let power = match chars.next()? {
        'k' => 1,
        'm' => 2,
        'g' => 3,
        't' => 4,
        'p' => 5,
        'e' => 6,
        _ => return None,
    };
    let rest = chars.as_str();
    let iec = match rest {
        "" | "b" | "i" => false,
        "ib" => true,
        _ => return None,
    };
    // kb_base=1024 is fio's compatibility mode: SI spellings mean binary, IEC ones decimal.
    let base: u64 = if iec == (kb_base == 1024) { 1000 } else { 1024 };
    base.checked_pow(power)
}

/// Parses `50%` as a percentage in 0..=100, anything else as [`parse_size`].
pub fn parse_size_or_percent(text: &str, kb_base: u64) -> Result<Amount, String> {
    let s = text.trim();
    match s.strip_suffix('%') {
        Some(p) => parse_percent(p).map(Amount::Percent),
        None => parse_size(s, kb_base).map(Amount::Bytes),
    }
}

/// A percentage 0..=100, fractions allowed (`12.5`).
fn parse_percent(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let ok = !t.is_empty()
        && t.chars().all(|c| c.is_ascii_digit() || c == '.')
        && t.chars().filter(|&c| c == '.').count() <= 1;
    let value: f64 = if ok { t.parse().ok() } else { None }
        .ok_or_else(|| format!("`{t}%` is not a percentage (expected e.g. 50%)"))?;
    if !(0.0..=100.0).contains(&value) {
        return Err(format!("`{t}%` is out of range (expected 0% to 100%)"));
    }
    Ok(value)
}

/// Parses a time to nanoseconds. `default_unit_ns` applies when no suffix is given (seconds
/// for `runtime`, microseconds for `thinktime`). Decimal fractions are allowed (`1.5s`).
pub fn parse_time_ns(text: &str, default_unit_ns: u64) -> Result<u64, String> {
    let s = text.trim();
    let num_end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, suffix) = s.split_at(num_end);
    let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return Err(format!("`{s}` is not a time (expected e.g. 30, 30s, 500ms, 2m, 1h)"));
    }
    if !frac_part.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!("`{s}` is not a time (expected e.g. 30, 30s, 500ms, 2m, 1h)"));
    }
    let mult: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" => default_unit_ns,
        "ns" | "nsec" => 1,
        "us" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" | "hour" => 3_600_000_000_000,
        "d" | "day" => 86_400_000_000_000,
        _ => {
            return Err(format!(
                "`{s}` has an unknown time suffix `{suffix}` (expected us, ms, s, m, h or d)"
            ))
        }
    };
    let too_large = || format!("`{s}` is too large");
    let whole: u128 =
        if int_part.is_empty() { 0 } else { int_part.parse().map_err(|_| too_large())? };
    let mut ns = whole.checked_mul(u128::from(mult)).ok_or_else(too_large)?;
    // Fraction digits beyond nanosecond precision cannot matter; keep the arithmetic bounded.
    let frac: String = frac_part.chars().take(18).collect();
    if !frac.is_empty() {
        let numer: u128 = frac.parse().map_err(|_| too_large())?;
        let denom = 10u128.pow(frac.len() as u32);
        ns = ns.checked_add(numer * u128::from(mult) / denom).ok_or_else(too_large)?;
    }
    u64::try_from(ns).map_err(|_| too_large())
}

/// fio booleans: only the integers 0 and 1 (fio rejects `true`, `yes`, `on`).
pub fn parse_bool(text: &str) -> Result<bool, String> {
    match parse_size(text, 1024) {
        Ok(0) => Ok(false),
        Ok(1) => Ok(true),
        _ => Err(format!("`{}` is not a boolean (expected 0 or 1)", text.trim())),
    }
}

/// Splits a per-direction value `read,write,trim` the way fio assigns it: one value applies to
/// all three directions; with several, a missing trailing one repeats the last written part,
/// and an empty part keeps the default (`bs=8k,` = 8k reads only; `rate=,1m` = writes and trims).
pub fn split_ddir(text: &str) -> Result<[Option<&str>; 3], String> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err(format!(
            "`{text}` has {} values; at most 3 (read,write,trim) are allowed",
            parts.len()
        ));
    }
    if parts.iter().all(|p| p.is_empty()) {
        return Err("a value is expected (read[,write[,trim]])".into());
    }
    let get = |i: usize| {
        let part = parts[i.min(parts.len() - 1)];
        (!part.is_empty()).then_some(part)
    };
    Ok([get(0), get(1), get(2)])
}

/// Splits `min-max` (fio also accepts `min:max`) into two trimmed parts.
pub fn split_range(text: &str) -> Option<(&str, &str)> {
    let (a, b) = text.split_once('-').or_else(|| text.split_once(':'))?;
    Some((a.trim(), b.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_fio_kb_base_inversion() {
        assert_eq!(parse_size("4096", 1024), Ok(4096));
        assert_eq!(parse_size("4k", 1024), Ok(4096));
        assert_eq!(parse_size("4K", 1024), Ok(4096));
        assert_eq!(parse_size("8kb", 1024), Ok(8192));
        assert_eq!(parse_size("8KiB", 1024), Ok(8000));
        assert_eq!(parse_size("8Ki", 1024), Ok(8192));
        assert_eq!(parse_size("8k", 1000), Ok(8000));
        assert_eq!(parse_size("8KiB", 1000), Ok(8192));
        assert_eq!(parse_size("2G", 1024), Ok(2 << 30));
        assert_eq!(parse_size("1t", 1024), Ok(1 << 40));
        assert_eq!(parse_size("1p", 1024), Ok(1 << 50));
        assert_eq!(parse_size("1mib", 1024), Ok(1_000_000));
        assert_eq!(parse_size("512b", 1024), Ok(512));
        assert_eq!(parse_size("0x2000", 1024), Ok(8192));
    }

    #[test]
    fn bad_sizes_are_errors() {
        assert!(parse_size("", 1024).is_err());
        assert!(parse_size("k", 1024).is_err());
        assert!(parse_size("8kX", 1024).unwrap_err().contains("suffix"));
        assert!(parse_size("1.5k", 1024).unwrap_err().contains("whole"));
        assert!(parse_size("-1", 1024).is_err());
        assert!(parse_size("99999999e", 1024).unwrap_err().contains("too large"));
        assert!(parse_size("0xzz", 1024).is_err());
    }

    #[test]
    fn percentages() {
        assert!(matches!(parse_size_or_percent("50%", 1024), Ok(Amount::Percent(p)) if p == 50.0));
        assert!(
            matches!(parse_size_or_percent("12.5%", 1024), Ok(Amount::Percent(p)) if p == 12.5)
        );
        assert!(matches!(parse_size_or_percent("1m", 1024), Ok(Amount::Bytes(1_048_576))));
        assert!(parse_size_or_percent("150%", 1024).is_err());
        assert!(parse_size_or_percent("x%", 1024).is_err());
        assert!(parse_size_or_percent("1..2%", 1024).is_err());
    }

    #[test]
    fn times_with_default_unit_and_suffixes() {
        let s = 1_000_000_000;
        assert_eq!(parse_time_ns("30", s), Ok(30 * s));
        assert_eq!(parse_time_ns("30", 1_000), Ok(30_000));
        assert_eq!(parse_time_ns("500ms", s), Ok(s / 2));
        assert_eq!(parse_time_ns("500msec", s), Ok(s / 2));
        assert_eq!(parse_time_ns("10us", s), Ok(10_000));
        assert_eq!(parse_time_ns("10usec", s), Ok(10_000));
        assert_eq!(parse_time_ns("2m", s), Ok(120 * s));
        assert_eq!(parse_time_ns("2min", s), Ok(120 * s));
        assert_eq!(parse_time_ns("1h", s), Ok(3600 * s));
        assert_eq!(parse_time_ns("1d", s), Ok(86_400 * s));
        assert_eq!(parse_time_ns("1.5s", s), Ok(3 * s / 2));
        assert_eq!(parse_time_ns("3S", s), Ok(3 * s));
        assert!(parse_time_ns("3x", s).unwrap_err().contains("suffix"));
        assert!(parse_time_ns("", s).is_err());
        assert!(parse_time_ns(".", s).is_err());
        assert!(parse_time_ns("1.2.3", s).is_err());
        assert!(parse_time_ns("99999999999999999999d", s).unwrap_err().contains("too large"));
    }

    #[test]
    fn booleans_are_0_or_1_only() {
        assert_eq!(parse_bool("1"), Ok(true));
        assert_eq!(parse_bool("0"), Ok(false));
        assert_eq!(parse_bool("01"), Ok(true));
        assert!(parse_bool("true").is_err());
        assert!(parse_bool("yes").is_err());
        assert!(parse_bool("2").is_err());
    }

    #[test]
    fn ddir_split_follows_fio() {
        assert_eq!(split_ddir("4k"), Ok([Some("4k"), Some("4k"), Some("4k")]));
        assert_eq!(split_ddir("4k,8k"), Ok([Some("4k"), Some("8k"), Some("8k")]));
        assert_eq!(split_ddir("4k,8k,"), Ok([Some("4k"), Some("8k"), None]));
        assert_eq!(split_ddir("4k,"), Ok([Some("4k"), None, None]));
        assert_eq!(split_ddir(",1m"), Ok([None, Some("1m"), Some("1m")]));
        assert_eq!(split_ddir("1,2,3"), Ok([Some("1"), Some("2"), Some("3")]));
        assert!(split_ddir("1,2,3,4").is_err());
        assert!(split_ddir("").is_err());
        assert!(split_ddir(",,").is_err());
    }

    #[test]
    fn ranges() {
        assert_eq!(split_range("4k-64k"), Some(("4k", "64k")));
        assert_eq!(split_range("4k:64k"), Some(("4k", "64k")));
        assert_eq!(split_range("4k"), None);
    }
}
