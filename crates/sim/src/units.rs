//! Human quantities in topology files: sizes (`200GiB`, `512k`, `1.5T` or a plain number of
//! bytes), link rates (`1Gbit`, `117MB/s`) and durations (`100us`, `2ms`).

/// Parses a size with an optional binary suffix (k, m, g, t, p; `KiB`-style or bare letters,
/// case-insensitive, all powers of 1024 as in fio's default `kb_base`).
pub fn parse_size_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, suffix) = t.split_at(split);
    if number.is_empty() {
        return Err(format!(
            "`{text}` is not a size: expected a number with an optional unit such as 4k, 200GiB"
        ));
    }
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        "p" | "pb" | "pib" => 50,
        other => {
            return Err(format!(
                "`{text}`: unknown size unit `{other}` (use k, M, G, T, P or KiB, MiB, ...)"
            ))
        }
    };
    let value: f64 = number.parse().map_err(|_| format!("`{text}` is not a size"))?;
    let bytes = value * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(format!("`{text}` is out of range"));
    }
    Ok(bytes.round() as u64)
}

/// Splits `12.5Gbit` into its number and its (trimmed) unit.
fn number_and_unit(text: &str) -> Option<(f64, &str)> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    Some((number.parse().ok()?, unit.trim()))
}

/// Parses a link rate into bytes per second. Network units count bits in powers of 1000
/// (`1Gbit`, `100Mbit/s`, `10Gbps`); byte units follow the size suffixes (`117MB/s` is
/// 117·10⁶ as drive and network datasheets write it; `110MiB/s` is 110·2²⁰).
pub fn parse_rate_bytes_per_sec(text: &str) -> Result<f64, String> {
    let err =
        || format!("`{text}` is not a rate: expected e.g. 1Gbit, 100Mbit/s, 117MB/s or 110MiB/s");
    let (value, unit) = number_and_unit(text).ok_or_else(err)?;
    let unit = unit.to_ascii_lowercase();
    let unit = unit.trim_end_matches("/s");
    let bits = unit.strip_suffix("bit").or_else(|| unit.strip_suffix("bps"));
    let bytes = match bits {
        Some(prefix) => {
            let scale = match prefix {
                "" => 1.0,
                "k" => 1e3,
                "m" => 1e6,
                "g" => 1e9,
                _ => return Err(err()),
            };
            value * scale / 8.0
        }
        None => {
            let scale = match unit {
                "b" | "" => 1.0,
                "kb" => 1e3,
                "mb" => 1e6,
                "gb" => 1e9,
                "kib" => 1024.0,
                "mib" => 1048576.0,
                "gib" => 1073741824.0,
                _ => return Err(err()),
            };
            value * scale
        }
    };
    if !(bytes.is_finite() && bytes > 0.0) {
        return Err(format!("`{text}`: a rate must be positive"));
    }
    Ok(bytes)
}

/// Parses a duration into nanoseconds: `ns`, `us`, `ms`, `s`; a bare number is microseconds.
pub fn parse_duration_ns(text: &str) -> Result<u64, String> {
    let err = || format!("`{text}` is not a duration: expected e.g. 100us, 2ms, 0.5s");
    let (value, unit) = number_and_unit(text).ok_or_else(err)?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "ns" => 1.0,
        "" | "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(err()),
    };
    let ns = value * scale;
    if !ns.is_finite() || ns > u64::MAX as f64 {
        return Err(format!("`{text}` is out of range"));
    }
    Ok(ns.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size_bytes("4096"), Ok(4096));
        assert_eq!(parse_size_bytes("4k"), Ok(4096));
        assert_eq!(parse_size_bytes("200GiB"), Ok(200 << 30));
        assert_eq!(parse_size_bytes("1.5M"), Ok(3 << 19));
        assert!(parse_size_bytes("12q").unwrap_err().contains("unknown size unit"));
        assert!(parse_size_bytes("").is_err());
    }

    #[test]
    fn rates_and_durations() {
        assert_eq!(parse_rate_bytes_per_sec("1Gbit"), Ok(125e6));
        assert_eq!(parse_rate_bytes_per_sec("100Mbit/s"), Ok(12.5e6));
        assert_eq!(parse_rate_bytes_per_sec("10Gbps"), Ok(1.25e9));
        assert_eq!(parse_rate_bytes_per_sec("117MB/s"), Ok(117e6));
        assert_eq!(parse_rate_bytes_per_sec("1MiB/s"), Ok(1048576.0));
        assert!(parse_rate_bytes_per_sec("fast").unwrap_err().contains("not a rate"));
        assert!(parse_rate_bytes_per_sec("0MB/s").is_err());
        assert_eq!(parse_duration_ns("100us"), Ok(100_000));
        assert_eq!(parse_duration_ns("2ms"), Ok(2_000_000));
        assert_eq!(parse_duration_ns("0.5s"), Ok(500_000_000));
        assert_eq!(parse_duration_ns("20"), Ok(20_000));
        assert!(parse_duration_ns("3 weeks").is_err());
    }
}
