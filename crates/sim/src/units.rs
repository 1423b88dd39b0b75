//! Human sizes in topology files: `200GiB`, `512k`, `1.5T` or a plain number of bytes.

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

#[cfg(test)]
mod tests {
    use super::parse_size_bytes;

    #[test]
    fn sizes() {
        assert_eq!(parse_size_bytes("4096"), Ok(4096));
        assert_eq!(parse_size_bytes("4k"), Ok(4096));
        assert_eq!(parse_size_bytes("200GiB"), Ok(200 << 30));
        assert_eq!(parse_size_bytes("1.5M"), Ok(3 << 19));
        assert!(parse_size_bytes("12q").unwrap_err().contains("unknown size unit"));
        assert!(parse_size_bytes("").is_err());
    }
}
