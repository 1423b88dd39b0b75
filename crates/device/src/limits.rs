//! Limits on the timing and rate parameters a topology gives a device model, checked before
//! the model is built: a value past them is a mistake (a drive whose single step takes over a
//! minute, or that moves less than a kilobyte a second), and simulated times built from it
//! would run towards the end of the 64-bit nanosecond clock.

/// The longest any one timing parameter of a device may be (an overhead, a head switch, a
/// page read, an erase): one minute.
pub const MAX_DEVICE_DELAY_MS: f64 = 60_000.0;
/// The slowest transfer rate a device model takes (its bus, host link or flash channel).
pub const MIN_DEVICE_BYTES_PER_SEC: f64 = 1e3;
/// The fastest transfer rate a device model takes: 1 TB/s.
pub const MAX_DEVICE_BYTES_PER_SEC: f64 = 1e12;

/// Checks timing parameter `name` (in milliseconds): finite, at least `floor`, at most
/// [`MAX_DEVICE_DELAY_MS`].
pub fn check_delay_ms(name: &str, ms: f64, floor: f64) -> Result<(), String> {
    check_delay(name, ms, floor, "milliseconds", 1.0)
}

/// [`check_delay_ms`] for a parameter in microseconds, at least 0.
pub fn check_delay_us(name: &str, us: f64) -> Result<(), String> {
    check_delay(name, us, 0.0, "microseconds", 1e3)
}

/// `value` in `unit`s, of which a millisecond holds `per_ms`: finite, at least `floor`, at
/// most [`MAX_DEVICE_DELAY_MS`].
fn check_delay(name: &str, value: f64, floor: f64, unit: &str, per_ms: f64) -> Result<(), String> {
    let max = MAX_DEVICE_DELAY_MS * per_ms;
    if value.is_finite() && value >= floor && value <= max {
        Ok(())
    } else {
        Err(format!(
            "{name} = {value} must be a finite number of {unit} in {floor}..={max} (MAX_DEVICE_DELAY_MS)"
        ))
    }
}

/// Checks rate parameter `name` (bytes per second) against [`MIN_DEVICE_BYTES_PER_SEC`] and
/// [`MAX_DEVICE_BYTES_PER_SEC`]; infinity is taken too, as a transfer that takes no time
/// (DiskSim's drives with no bus time per sector).
pub fn check_bytes_per_sec(name: &str, v: f64) -> Result<(), String> {
    if v == f64::INFINITY || (MIN_DEVICE_BYTES_PER_SEC..=MAX_DEVICE_BYTES_PER_SEC).contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "{name} = {v} must be in {MIN_DEVICE_BYTES_PER_SEC}..={MAX_DEVICE_BYTES_PER_SEC} bytes per second (MIN_/MAX_DEVICE_BYTES_PER_SEC), or inf for no transfer time"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_take_the_range_and_name_the_parameter() {
        assert!(check_delay_ms("head_switch_ms", 0.0, 0.0).is_ok());
        assert!(check_delay_ms("head_switch_ms", MAX_DEVICE_DELAY_MS, 0.0).is_ok());
        let e = check_delay_ms("head_switch_ms", 1e30, 0.0).unwrap_err();
        assert!(e.starts_with("head_switch_ms = ") && e.contains("MAX_DEVICE_DELAY_MS"), "{e}");
        assert!(check_delay_ms("x", f64::NAN, 0.0).is_err());
        assert!(check_delay_ms("x", -0.5, -1.0).is_ok() && check_delay_ms("x", -0.5, 0.0).is_err());
        assert!(check_delay_us("page_read_us", MAX_DEVICE_DELAY_MS * 1e3).is_ok());
        let e = check_delay_us("page_read_us", 1e30).unwrap_err();
        assert!(e.contains("microseconds in 0..=60000000"), "{e}");
        assert!(check_bytes_per_sec("bus_bytes_per_sec", 100e6).is_ok());
        assert!(check_bytes_per_sec("bus_bytes_per_sec", 1e-6).is_err());
        assert!(check_bytes_per_sec("bus_bytes_per_sec", f64::INFINITY).is_ok());
        assert!(check_bytes_per_sec("bus_bytes_per_sec", f64::NAN).is_err());
        assert!(check_bytes_per_sec("bus_bytes_per_sec", 2e12).is_err());
    }
}
