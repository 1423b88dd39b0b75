//! Reads DiskSim validation traces (`R|W Hit start size access_us think_us`), the measured
//! side of the comparison. Errors name file:line.

use crate::error::DiskSimError;
use crate::EXACT_POW10;
use std::path::Path;

/// One measured request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceRecord {
    pub is_write: bool,
    pub start_block: u64,
    pub size_sectors: u32,
    /// Measured access time in µs.
    pub access_time_us: f64,
    /// Think time before the next request in µs.
    pub think_time_us: f64,
    /// Line in the trace file (1-based).
    pub line: usize,
}

impl TraceRecord {
    /// Access time in ms, as DiskSim's statistics see it.
    pub fn access_time_ms(&self) -> f64 {
        self.access_time_us / 1000.0
    }
}

/// Parse trace text. Blank lines and `#` comments are skipped.
///
/// One pass over the bytes: `Cursor::common_line` reads a line where it starts and stops at
/// its end, so lines are not split out first (finding every newline ahead of the reader was a
/// sixth of the parse); a line it does not take is cut out and read by `any_line`.
pub fn parse_trace(text: &str, file: &str) -> Result<Vec<TraceRecord>, DiskSimError> {
    let mut out = Vec::with_capacity(text.len() / 40 + 1);
    parse_lines(text, 0, file, &mut |r| out.push(r))?;
    Ok(out)
}

/// Parses `text`, whose first line is line `lines_before + 1` of `file`; returns the number
/// of the last line read (`lines_before` for an empty text).
fn parse_lines(
    text: &str,
    lines_before: usize,
    file: &str,
    each: &mut impl FnMut(TraceRecord),
) -> Result<usize, DiskSimError> {
    let s = text.as_bytes();
    let (mut at, mut ln) = (0, lines_before);
    // One past the newline at or after `i` (the end of the text without one).
    let next_line =
        |i: usize| s[i..].iter().position(|&b| b == b'\n').map_or(s.len(), |p| i + p + 1);
    while at < s.len() {
        ln += 1;
        let mut c = Cursor { s, i: at };
        if let Some(rec) = c.common_line(ln) {
            each(rec);
            at = if s.get(c.i) == Some(&b'\n') { c.i + 1 } else { next_line(c.i) };
            continue;
        }
        let end = next_line(at);
        // A `\r` before the newline is whitespace to `any_line`, as it is to `str::lines`.
        if let Some(rec) = any_line(text[at..end].trim_end_matches('\n'), ln, file)? {
            each(rec);
        }
        at = end;
    }
    Ok(ln)
}

/// [`Cursor::common_line`] over one line.
#[cfg(test)]
fn common_line(line: &[u8], ln: usize) -> Option<TraceRecord> {
    Cursor { s: line, i: 0 }.common_line(ln)
}

/// A place in the trace text; the line ends at a newline or the end of the text.
struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

/// Blanks between a line's words: ASCII whitespace but the newline, which ends the line
/// (`str::lines` leaves a `\r` before it, which `split_ascii_whitespace` skips as this does).
fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\x0c')
}

impl Cursor<'_> {
    /// The line almost every trace line is (`R Hit 2992396 4 13670.00000 35942.00000`), read
    /// in one pass over its bytes: an `R` or `W`, a word, two unsigned integers and two plain
    /// decimals, separated by blanks, anything after the sixth field ignored (the cursor then
    /// stands at the sixth field's end). `None` for any other line (blank, comment, sign,
    /// exponent, error), which [`any_line`] then reads; where this reads a line, it reads it
    /// as [`any_line`] does (property test `the_common_line_reads_as_any_line`). Splitting
    /// into words and parsing each took a quarter of `validate-disk`'s instructions.
    fn common_line(&mut self, ln: usize) -> Option<TraceRecord> {
        self.blanks();
        let is_write = match self.byte()? {
            b'R' | b'r' => false,
            b'W' | b'w' => true,
            _ => return None,
        };
        self.i += 1;
        self.end_of_word()?;
        self.blanks();
        let start = self.i;
        while self.byte().is_some_and(|b| !b.is_ascii_whitespace()) {
            self.i += 1;
        }
        (self.i > start).then_some(())?;
        let start_block = self.integer()?;
        let size_sectors = u32::try_from(self.integer()?).ok()?;
        let access_time_us = self.decimal()?;
        let think_time_us = self.decimal()?;
        Some(TraceRecord {
            is_write,
            start_block,
            size_sectors,
            access_time_us,
            think_time_us,
            line: ln,
        })
    }

    fn byte(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn blanks(&mut self) {
        while self.byte().is_some_and(is_blank) {
            self.i += 1;
        }
    }

    /// A word ends at whitespace (a blank or the line's end) or the end of the text.
    fn end_of_word(&self) -> Option<()> {
        self.byte().is_none_or(|b| b.is_ascii_whitespace()).then_some(())
    }

    /// The digits that follow, appended to `v`; `None` past `most` of them (at most 19: so
    /// many digits in all keep a `u64` from overflowing; past them the wrapped value is
    /// dropped), else the value and how many there were.
    #[inline]
    fn digits(&mut self, mut v: u64, most: usize) -> Option<(u64, usize)> {
        let start = self.i;
        let mut i = start;
        while let Some(&b) = self.s.get(i) {
            let d = b.wrapping_sub(b'0');
            if d >= 10 {
                break;
            }
            v = v.wrapping_mul(10).wrapping_add(u64::from(d));
            i += 1;
        }
        self.i = i;
        (i - start <= most).then_some((v, i - start))
    }

    /// The next word as an unsigned integer, read as `str::parse::<u64>` reads it.
    fn integer(&mut self) -> Option<u64> {
        self.blanks();
        let (v, n) = self.digits(0, 19)?;
        (n > 0).then_some(())?;
        self.end_of_word()?;
        Some(v)
    }

    /// The next word as a plain decimal, read as [`plain_decimal`] reads it.
    fn decimal(&mut self) -> Option<f64> {
        self.blanks();
        let (m, whole) = self.digits(0, 19)?;
        let (m, decimals) = if self.byte() == Some(b'.') {
            self.i += 1;
            self.digits(m, 19 - whole)?
        } else {
            (m, 0)
        };
        (whole + decimals > 0).then_some(())?;
        self.end_of_word()?;
        exact_decimal(m, decimals)
    }
}

/// Any trace line: `None` for a blank line or a comment, an error naming the file, line and
/// field for a malformed one.
fn any_line(line: &str, ln: usize, file: &str) -> Result<Option<TraceRecord>, DiskSimError> {
    // ASCII whitespace only: the traces are ASCII, and it is much cheaper to split.
    let mut f = line.split_ascii_whitespace().peekable();
    if f.peek().is_none_or(|first| first.starts_with('#')) {
        return Ok(None);
    }
    let err = |msg: String| DiskSimError::Syntax { file: file.to_string(), line: ln, msg };
    let mut field = |name: &str| f.next().ok_or_else(|| err(format!("missing field `{name}`")));
    let op = field("R|W")?;
    let is_write = match op {
        "R" | "r" => false,
        "W" | "w" => true,
        o => {
            // DiskSim's other text trace, its ASCII input format (`valid/ascii.trace`): arrival
            // time, device, block, size, flags.
            let ascii = o.parse::<f64>().is_ok() && line.split_ascii_whitespace().count() == 5;
            let hint = if ascii {
                "; this line is a DiskSim ASCII input trace record (time device block size \
                 flags), not a validation trace's (R|W Hit|Miss block size access think)"
            } else {
                ""
            };
            return Err(err(format!("field `R|W`: expected R or W, got `{o}`{hint}")));
        }
    };
    let _buf = field("buffer")?;
    let sb = field("start_block")?;
    let sz = field("size_sectors")?;
    let at = field("access_time_us")?;
    let tt = field("think_time_us")?;
    let start_block =
        sb.parse::<u64>().map_err(|_| err(format!("field `start_block`: bad integer `{sb}`")))?;
    let size_sectors =
        sz.parse::<u32>().map_err(|_| err(format!("field `size_sectors`: bad integer `{sz}`")))?;
    let num = |name: &str, s: &str| -> Result<f64, DiskSimError> {
        match plain_decimal(s.as_bytes()).map_or_else(|| s.parse::<f64>(), Ok) {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
            _ => Err(err(format!("field `{name}`: bad non-negative number `{s}`"))),
        }
    };
    Ok(Some(TraceRecord {
        is_write,
        start_block,
        size_sectors,
        access_time_us: num("access_time_us", at)?,
        think_time_us: num("think_time_us", tt)?,
        line: ln,
    }))
}

/// A plain decimal (`874`, `13670.00000`) read as `str::parse::<f64>` reads it, without its
/// general machinery (a trace is mostly such numbers, and reading them was a fifth of
/// `validate-disk`'s time): when its digits, the point left out, make an integer of at most
/// 2^53 and at most 22 of them follow the point, the value is that integer over a power of
/// ten, both exact doubles, and the one rounded division is the correctly rounded value
/// (Clinger's fast path, which `str::parse` takes as well). `None` for anything else.
fn plain_decimal(s: &[u8]) -> Option<f64> {
    let (mut m, mut digits, mut point) = (0u64, 0usize, None);
    for &b in s {
        match b {
            b'0'..=b'9' => {
                m = m.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
                digits += 1;
            }
            b'.' if point.is_none() => point = Some(digits),
            _ => return None,
        }
    }
    let decimals = digits - point.unwrap_or(digits);
    (digits > 0).then_some(())?;
    exact_decimal(m, decimals)
}

/// `m / 10^decimals` when both are exact doubles (`m` ≤ 2^53, at most 22 decimals), so that
/// the one rounded division is the correctly rounded value (Clinger's fast path); `None`
/// otherwise.
fn exact_decimal(m: u64, decimals: usize) -> Option<f64> {
    (m <= 1 << 53 && decimals < EXACT_POW10.len()).then(|| m as f64 / EXACT_POW10[decimals])
}

/// The largest trace file read: 1 GiB (about 20 million requests; DiskSim's validation
/// traces hold 10,000), so that a wrong path cannot fill memory.
pub const MAX_TRACE_BYTES: u64 = 1 << 30;

/// Bytes [`parse_trace_file`] reads at a time. The file is parsed a block of whole lines at a
/// time out of one buffer of this size, so reading it touches this much fresh memory, not
/// the file's size: on barracuda (470 kB) the page faults of a buffer holding the whole file
/// were a fifth of `validate-disk`'s.
pub const TRACE_BLOCK_BYTES: usize = 16 << 10;

/// The most bytes [`is_validation_trace`] reads of a file's start.
const TRACE_SNIFF_BYTES: u64 = 256;

/// Whether `path` is a file whose first line is a DiskSim validation record (`R` or `W`,
/// then `Hit` or `Miss`), not some other trace format (DiskSim's ASCII traces).
pub fn is_validation_trace(path: &Path) -> bool {
    use std::io::Read as _;
    let Ok(f) = std::fs::File::open(path) else { return false };
    let mut head = String::new();
    if f.take(TRACE_SNIFF_BYTES).read_to_string(&mut head).is_err() {
        return false;
    }
    let mut words = head.lines().next().unwrap_or("").split_whitespace();
    matches!(words.next(), Some("R" | "W" | "r" | "w"))
        && matches!(words.next(), Some(w) if w.eq_ignore_ascii_case("hit") || w.eq_ignore_ascii_case("miss"))
}

/// Read and parse a trace file (at most [`MAX_TRACE_BYTES`]).
pub fn load_trace(path: &Path) -> Result<Vec<TraceRecord>, DiskSimError> {
    let mut out = Vec::new();
    parse_trace_file(path, |r| out.push(r))?;
    Ok(out)
}

/// [`load_trace`], handing each record to `each` in trace order as it is read. The file is
/// read [`TRACE_BLOCK_BYTES`] at a time and refused past [`MAX_TRACE_BYTES`] (its size, or
/// what was read if it grew); text that is not UTF-8 is an error naming its line. Errors come
/// in file order: records before the first bad line have been handed over.
pub fn parse_trace_file(
    path: &Path,
    mut each: impl FnMut(TraceRecord),
) -> Result<(), DiskSimError> {
    use std::io::Read;
    let io = |e| DiskSimError::Io { path: path.to_path_buf(), source: e };
    let file = path.display().to_string();
    let too_big = |bytes: u64| DiskSimError::Syntax {
        file: file.clone(),
        line: 0,
        msg: format!(
            "{bytes} bytes, more than a trace may hold ({MAX_TRACE_BYTES}, MAX_TRACE_BYTES)"
        ),
    };
    let mut f = std::fs::File::open(path).map_err(io)?;
    let bytes = f.metadata().map_err(io)?.len();
    if bytes > MAX_TRACE_BYTES {
        return Err(too_big(bytes));
    }
    let mut buf = vec![0u8; TRACE_BLOCK_BYTES];
    // Bytes in `buf` (a partial last line kept from the block before, then what was read),
    // bytes read in all, and lines parsed.
    let (mut filled, mut read, mut lines) = (0, 0u64, 0);
    loop {
        if filled == buf.len() {
            // A line longer than the buffer: room for more of it (the total is bounded).
            buf.resize(buf.len() * 2, 0);
        }
        let n = match f.read(&mut buf[filled..]) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
        read += n as u64;
        if read > MAX_TRACE_BYTES {
            return Err(too_big(read));
        }
        filled += n;
        // Whole lines only, but all of it at the end of the file.
        let end = match (n, buf[..filled].iter().rposition(|&b| b == b'\n')) {
            (0, _) => filled,
            (_, Some(newline)) => newline + 1,
            (_, None) => continue,
        };
        let text = std::str::from_utf8(&buf[..end]).map_err(|e| {
            let before = &buf[..e.valid_up_to()];
            DiskSimError::Syntax {
                file: file.clone(),
                line: lines + 1 + before.iter().filter(|&&b| b == b'\n').count(),
                msg: "not UTF-8 text".into(),
            }
        })?;
        lines = parse_lines(text, lines, &file, &mut each)?;
        if n == 0 {
            return Ok(());
        }
        buf.copy_within(end..filled, 0);
        filled -= end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The fast path reads every plain decimal as `str::parse` does, or leaves it.
        #[test]
        fn plain_decimals_read_as_str_parse_reads_them(
            int in "[0-9]{0,20}",
            frac in proptest::option::of("[0-9]{0,25}"),
        ) {
            let s = match &frac { Some(f) => format!("{int}.{f}"), None => int.clone() };
            if let Some(v) = plain_decimal(s.as_bytes()) {
                prop_assert_eq!(v.to_bits(), s.parse::<f64>().unwrap().to_bits(), "{}", s);
            }
        }
    }

    proptest! {
        /// Where the one-pass reader takes a line, it reads what the general reader reads;
        /// and it takes the common lines.
        #[test]
        fn the_common_line_reads_as_any_line(
            op in prop_oneof![Just("R"), Just("W"), Just("r"), Just("w"), Just("#R"), Just("X"), Just("")],
            buffer in prop_oneof![Just("Hit".to_string()), Just("Miss".to_string()), Just(String::new()), "[ -~]{1,4}"],
            ints in proptest::collection::vec(prop_oneof![
                "[0-9]{1,10}", "[0-9]{19,21}", Just("4294967296".to_string()),
                Just("+7".to_string()), Just("-3".to_string()), Just("0x10".to_string()),
            ], 2),
            nums in proptest::collection::vec(prop_oneof![
                "[0-9]{1,8}\\.[0-9]{5}", "[0-9]{0,20}\\.?[0-9]{0,24}", Just("1e3".to_string()),
                Just("-1.0".to_string()), Just("inf".to_string()), Just("NaN".to_string()),
            ], 2),
            extra in prop_oneof![Just(""), Just(" trailing words"), Just("\r")],
            sep in prop_oneof![Just(" "), Just("   "), Just("\t"), Just(" \x0c")],
        ) {
            let fields = [op, &buffer, &ints[0], &ints[1], &nums[0], &nums[1]];
            let line = format!("{sep}{}{extra}", fields.join(sep));
            let any = any_line(&line, 3, "t");
            match common_line(line.as_bytes(), 3) {
                Some(r) => prop_assert_eq!(any.ok().flatten(), Some(r), "{:?}", line),
                None => {
                    let plain = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.');
                    let common = matches!(op, "R" | "W" | "r" | "w")
                        && !buffer.trim().is_empty() && !buffer.contains(char::is_whitespace)
                        && ints.iter().all(|i| i.bytes().all(|b| b.is_ascii_digit()))
                        && ints[0].len() < 20 && ints[1].parse::<u32>().is_ok()
                        && nums.iter().all(|n| {
                            plain(n) && plain_decimal(n.as_bytes()).is_some()
                                && n.bytes().filter(u8::is_ascii_digit).count() <= 19
                        });
                    prop_assert!(!common, "a common line left to the general reader: {:?}", line);
                }
            }
        }
    }

    #[test]
    fn a_trace_past_the_limit_is_refused_before_it_is_read() {
        let path = std::env::temp_dir().join(format!("huge-{}.trace", std::process::id()));
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(MAX_TRACE_BYTES + 1).unwrap(); // sparse: nothing written
        let e = load_trace(&path).unwrap_err().to_string();
        let _ = std::fs::remove_file(&path);
        assert!(e.contains("MAX_TRACE_BYTES") && e.contains("huge-"), "{e}");
    }

    #[test]
    fn an_ascii_input_trace_is_named_for_what_it_is() {
        // The first line of DiskSim 4.0's valid/ascii.trace.
        let e = parse_trace("13.191135\t30\t0\t5\t1\n", "a.trace").unwrap_err().to_string();
        assert!(e.contains("a.trace:1") && e.contains("ASCII input trace"), "{e}");
        let e = parse_trace("X Hit 0 8 1.0 1.0\n", "b.trace").unwrap_err().to_string();
        assert!(e.contains("got `X`") && !e.contains("ASCII"), "{e}");
    }

    /// `text` as a file in a scratch directory.
    fn scratch_trace(name: &str, text: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("elevator-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Read a block at a time, a file gives what its whole text gives: lines across
        /// block ends, lines longer than a block, CRLF, comments, no newline at the end.
        #[test]
        fn a_file_read_by_blocks_parses_as_its_whole_text(
            lines in proptest::collection::vec(
                prop_oneof![
                    40 => (0u64..1 << 40, 1u32..1000, "[0-9]{1,6}\\.[0-9]{1,5}")
                        .prop_map(|(b, n, t)| format!("W Miss {b} {n} {t} 1.5")),
                    4 => Just("# a comment".to_string()),
                    4 => Just(String::new()),
                    // Longer than a block, and a comment, so that it reads.
                    1 => (1usize..3).prop_map(|k| format!("#{}", "x".repeat(k * TRACE_BLOCK_BYTES))),
                ],
                0..1500,
            ),
            crlf in any::<bool>(),
            last_newline in any::<bool>(),
        ) {
            let nl = if crlf { "\r\n" } else { "\n" };
            let mut text = lines.join(nl);
            if last_newline && !text.is_empty() {
                text += nl;
            }
            let path = scratch_trace("blocks.trace", text.as_bytes());
            let name = path.display().to_string();
            prop_assert_eq!(load_trace(&path).unwrap(), parse_trace(&text, &name).unwrap());
        }
    }

    #[test]
    fn a_file_names_its_first_bad_line_past_the_first_block() {
        let good = "R Hit 10 4 874.5 0.25\n";
        let n = 2 * TRACE_BLOCK_BYTES / good.len();
        let mut text = good.repeat(n).into_bytes();
        text.extend_from_slice(b"R Hit 10 4 \xff 0.25\nR Hit 10 x 874.5 0.25\n");
        let e = load_trace(&scratch_trace("utf8.trace", &text)).unwrap_err().to_string();
        assert!(e.contains(&format!("utf8.trace:{}", n + 1)) && e.contains("UTF-8"), "{e}");
        let mut seen = 0;
        text[n * good.len() + 11] = b'7';
        let path = scratch_trace("syntax.trace", &text);
        let e = parse_trace_file(&path, |_| seen += 1).unwrap_err().to_string();
        assert!(e.contains(&format!("syntax.trace:{}", n + 2)), "{e}");
        assert_eq!(seen, n + 1, "the records before the bad line were handed over");
    }

    #[test]
    fn plain_decimals_take_only_plain_numbers() {
        assert_eq!(plain_decimal(b"13670.00000"), Some(13670.0));
        assert_eq!(plain_decimal(b"0.1"), Some(0.1));
        assert_eq!(plain_decimal(b"9007199254740993"), None); // past 2^53
        for s in ["", ".", "-1", "+1", "1e3", "1.2.3", "inf", "1 "] {
            assert_eq!(plain_decimal(s.as_bytes()), None, "{s}");
        }
        let common = common_line(b"R Hit    2992396   4  13670.00000  35942.00000", 1).unwrap();
        assert_eq!(
            (common.start_block, common.size_sectors, common.think_time_us),
            (2992396, 4, 35942.0)
        );
        let t = "# comment\n\n   \nR Hit 10 4 874.5 0.25\n";
        let r = parse_trace(t, "t").unwrap();
        assert_eq!(
            (r.len(), r[0].access_time_us, r[0].think_time_us, r[0].line),
            (1, 874.5, 0.25, 4)
        );
        let e = parse_trace("R Hit 10 4 -3 1\n", "t").unwrap_err().to_string();
        assert!(e.contains("t") && e.contains("access_time_us"), "{e}");
    }
}
