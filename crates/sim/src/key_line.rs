//! Moves an error about a TOML table from the table's header line to the line of the key
//! the message names.
//!
//! serde hands the topology's builders a table with its span, so their errors are located at
//! the table's `[[device]]` or `[machine]` line. A user looking for `read_ahead_kb 99999999 is
//! over the limit` wants the line where `read_ahead_kb` is written: [`at_named_key`] finds, in
//! the table and its sub-tables (`[device.params]`), the first key the message names, outside
//! backticks or else inside them (they quote names and values, device `sda`, but keys too,
//! unknown field `tR_us`), and moves the error there. A message that names no key written in
//! the table keeps the header's line.

use elevator_core::text::{toml_header as header, toml_keys};

/// `error` (`NAME:LINE: message`, LINE a table's header in `text`) at the line of the first key
/// of that table the message names; otherwise `error` unchanged.
pub(crate) fn at_named_key(text: &str, name: &str, error: String) -> String {
    let Some(rest) = error.strip_prefix(name).and_then(|r| r.strip_prefix(':')) else {
        return error;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (Ok(line), Some(message)) =
        (rest[..digits].parse::<usize>(), rest[digits..].strip_prefix(": "))
    else {
        return error;
    };
    let lines: Vec<&str> = text.lines().collect();
    let Some(table) = line.checked_sub(1).and_then(|i| lines.get(i)).and_then(|l| header(l)) else {
        return error;
    };
    let sub_table = format!("{table}.");
    let mut keys: Vec<(String, usize)> = Vec::new();
    for (i, l) in lines.iter().enumerate().skip(line) {
        if let Some(h) = header(l) {
            if h.starts_with(&sub_table) {
                continue;
            }
            break;
        }
        keys.extend(keys_on(l).into_iter().map(|k| (k, i + 1)));
    }
    // Bare words first: a backticked word is more often a name or a value (device `sda`)
    // than a key (unknown field `tR_us`, iosched `slice_idl`).
    let line_of = |word: &str| keys.iter().find(|(k, _)| k == word).map(|&(_, at)| at);
    let at = words(message, 0).chain(words(message, 1)).find_map(line_of);
    match at {
        Some(at) => format!("{name}:{at}: {message}"),
        None => error,
    }
}

/// The keys a line assigns, its inline tables' too, as an error may name them: a dotted key
/// (`params.rpm = 1`) also by its last part; a quoted one (`"io.cost.qos"`) is one name.
fn keys_on(line: &str) -> Vec<String> {
    let mut keys = Vec::new();
    for k in toml_keys(line) {
        if let Some((_, last)) = k.name.rsplit_once('.').filter(|_| !k.quoted) {
            keys.push(last.to_string());
        }
        keys.push(k.name);
    }
    keys
}

/// The words of `message` outside backticks (`quoted` 0) or inside them (1): runs of
/// letters, digits, `_`, `.` and `-`, without a `.` or `-` at either end (`io.cost.qos:`
/// gives `io.cost.qos`).
fn words(message: &str, quoted: usize) -> impl Iterator<Item = &str> {
    message
        .split('`')
        .skip(quoted)
        .step_by(2)
        .flat_map(|part| part.split(|c: char| !(c.is_ascii_alphanumeric() || "_.-".contains(c))))
        .map(|w| w.trim_matches(|c| c == '.' || c == '-'))
        .filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# a topology\n[machine]\nmemory = \"4GiB\"\n\ndirty_ratio = 120 # too many\n\n[[device]]\nname = \"sda\"\nmodel = \"hdd\"\nparams = { write_cache = false, \"rpm\" = 7200 }\nread_ahead_kb = 99999999\n[device.params2]\nqueue_depth = 0\n\n[[device]]\nname = \"sdb\"\n";

    #[test]
    fn a_named_key_moves_the_error_to_its_line() {
        let e = |s: &str| at_named_key(TEXT, "t.toml", s.to_string());
        assert_eq!(
            e("t.toml:2: [machine] dirty_ratio 120 must be a percentage, 0..=100"),
            "t.toml:5: [machine] dirty_ratio 120 must be a percentage, 0..=100"
        );
        assert_eq!(
            e("t.toml:7: device `sda`: read_ahead_kb 99999999 is over the limit"),
            "t.toml:11: device `sda`: read_ahead_kb 99999999 is over the limit"
        );
        // Keys of inline tables and of sub-tables, quoted or not.
        assert_eq!(
            e("t.toml:7: device `sda`: write_cache needs x"),
            "t.toml:10: device `sda`: write_cache needs x"
        );
        assert_eq!(e("t.toml:7: device `sda`: rpm 7200."), "t.toml:10: device `sda`: rpm 7200.");
        assert_eq!(e("t.toml:7: queue_depth 0"), "t.toml:13: queue_depth 0");
    }

    #[test]
    fn otherwise_the_error_stays_where_it_was() {
        let e = |s: &str| at_named_key(TEXT, "t.toml", s.to_string());
        // A key in backticks counts after the bare words.
        assert_eq!(
            e("t.toml:7: device `sda`: rpm `read_ahead_kb`"),
            "t.toml:10: device `sda`: rpm `read_ahead_kb`"
        );
        assert_eq!(
            e("t.toml:7: unknown field `read_ahead_kb`"),
            "t.toml:11: unknown field `read_ahead_kb`"
        );
        for unchanged in [
            // Names and values in backticks are not keys.
            "t.toml:7: device `sda`: preset `ssd` is unknown",
            // A key of another table.
            "t.toml:15: device `sdb`: read_ahead_kb is bad",
            // Not a header line, no line, another file, a line past the end.
            "t.toml:3: memory is bad",
            "t.toml: memory is bad",
            "u.toml:2: memory is bad",
            "t.toml:99: memory is bad",
            "t.toml:0: memory is bad",
            // A commented-out key.
            "t.toml:2: too many is bad",
        ] {
            assert_eq!(e(unchanged), unchanged);
        }
    }

    #[test]
    fn keys_are_found_as_toml_writes_them() {
        assert_eq!(keys_on("a = 1"), ["a"]);
        assert_eq!(keys_on("  \"io.cost.qos\" = \"8:0 x=1\""), ["io.cost.qos"]);
        assert_eq!(keys_on("params.rpm = 1"), ["rpm", "params.rpm"]);
        assert_eq!(keys_on("p = { a = \"x = 1, b = 2\", c = [1, 2] }"), ["p", "a", "c"]);
        assert_eq!(keys_on("# a = 1"), Vec::<String>::new());
    }
}
