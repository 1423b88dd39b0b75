//! fio's `num2str` (`lib/num2str.c`): how its text report writes rates, sizes and counts —
//! at most `maxlen` characters of number, the largest prefix that fits, a fraction only when
//! there is room for one, rounded as fio rounds ("complete with carry rounding error").
//! Reports printed through it read the same as real fio's (`BW=77.0MiB/s`, `io=231MiB`,
//! `IOPS=19.7k`).

/// What the number counts (`enum n2s_unit`): its unit after the prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Units {
    /// A count (IOPS).
    None,
    Byte,
    BytePerSec,
}

impl Units {
    fn suffix(self) -> &'static str {
        match self {
            Units::None => "",
            Units::Byte => "B",
            Units::BytePerSec => "B/s",
        }
    }
}

/// fio's significant figures by default (`significant_figures=4`).
pub const SIG_FIGS: usize = 4;

const SI: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
const IEC: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/// `num2str(num, maxlen, base, pow2, units)`: `num` in units of `base` (1, or a power of the
/// prefix step), with binary prefixes (`pow2`) or decimal ones.
pub fn num2str(num: u64, maxlen: usize, base: u64, pow2: bool, units: Units) -> String {
    let prefixes = if pow2 { &IEC } else { &SI };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let mut post = 0;
    let mut base = base;
    while base > 1 {
        base /= thousand;
        post += 1;
    }
    let mut num = num;
    let mut modulo = None;
    let mut carry = false;
    // Divide by k/Ki until the number is at most `maxlen` digits.
    while post < prefixes.len() {
        if digits(num) <= maxlen {
            break;
        }
        let m = num % thousand;
        num /= thousand;
        carry = m >= thousand / 2;
        modulo = Some(m);
        post += 1;
    }
    if post >= prefixes.len() {
        post = 0;
    }
    let unit = units.suffix();
    let Some(m) = modulo else { return format!("{num}{}{unit}", prefixes[post]) };
    // No room for a fraction: round the whole number.
    let room = maxlen as isize - digits(num) as isize;
    if room <= 1 {
        return format!("{}{}{unit}", num + u64::from(carry), prefixes[post]);
    }
    let fraction = format!("{:.*}", (room - 1) as usize, m as f64 / thousand as f64);
    if fraction.starts_with('1') {
        num += 1;
    }
    format!("{num}.{}{}{unit}", &fraction[2..], prefixes[post])
}

fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings real fio 3.33 printed for these numbers.
    #[test]
    fn as_fio_writes_them() {
        let rate = |n, pow2| num2str(n, SIG_FIGS, 1, pow2, Units::BytePerSec);
        assert_eq!(rate(4_096_000, true), "4000KiB/s");
        assert_eq!(rate(4_096_000, false), "4096kB/s");
        assert_eq!(rate(80_740_352, true), "77.0MiB/s");
        assert_eq!(rate(80_740_352, false), "80.7MB/s");
        let size = |n, pow2| num2str(n, SIG_FIGS, 1, pow2, Units::Byte);
        assert_eq!(size(242_221_056, true), "231MiB");
        assert_eq!(size(242_221_056, false), "242MB");
        assert_eq!(size(12_288_000, true), "11.7MiB");
        assert_eq!(size(12_288_000, false), "12.3MB");
        assert_eq!(num2str(19_712, SIG_FIGS, 1, false, Units::None), "19.7k");
        assert_eq!(num2str(1000, SIG_FIGS, 1, false, Units::None), "1000");
        assert_eq!(num2str(0, SIG_FIGS, 1, true, Units::Byte), "0B");
        // A value in KiB (`base` 1024) starts at the Ki prefix.
        assert_eq!(num2str(4000, SIG_FIGS, 1024, true, Units::BytePerSec), "4000KiB/s");
        assert_eq!(num2str(u64::MAX, SIG_FIGS, 1, true, Units::Byte), "16.0EiB");
    }

    /// fio's carry: 9999.6 k-units round up past the digits they had.
    #[test]
    fn rounding_carries_as_fio_does() {
        assert_eq!(num2str(99_996, 4, 1, false, Units::None), "100.0k");
        assert_eq!(num2str(1_023_999, 4, 1, true, Units::Byte), "1000KiB");
    }
}
