//! Where a key of a scenario file's `[[table]]` or `[[table.variant]]` is written, so that
//! errors found after parsing (an unknown scheduler, a tunable it does not have, a job file
//! that is not there) name its line as a parse error would.

use elevator_core::text::{toml_header, toml_keys};

/// The 1-based line of `key` in table number `table` (its own keys when `variant` is `None`,
/// else those of its variant number `variant`; with `table` `None`, the file's own keys before
/// its first table), as `key = ...`, as the first part of a dotted key
/// (`iosched.slice_idle = 0`) or as a `[table.KEY]` / `[table.variant.KEY]` sub-table header;
/// `None` if it is not written there (a default) or the file writes its tables in a form this
/// does not follow (inline arrays of tables).
pub(crate) fn key_line(
    text: &str,
    table: Option<usize>,
    variant: Option<usize>,
    key: &str,
) -> Option<usize> {
    // Position while reading: table and variant numbers, whether in a sub-table of them.
    let (mut t, mut v): (Option<usize>, Option<usize>) = (None, None);
    let mut in_sub_table = false;
    let own_sub = match variant {
        None => format!("table.{key}"),
        Some(_) => format!("table.variant.{key}"),
    };
    let dotted = format!("{key}.");
    for (i, line) in text.lines().enumerate() {
        if let Some(header) = toml_header(line) {
            let array = line.trim_start().starts_with("[[");
            match header {
                "table" if array => {
                    t = Some(t.map_or(0, |n| n + 1));
                    v = None;
                    in_sub_table = false;
                }
                "table.variant" if array => {
                    v = Some(v.map_or(0, |n| n + 1));
                    in_sub_table = false;
                }
                header => {
                    if t.is_some() && t == table && v == variant && header == own_sub {
                        return Some(i + 1);
                    }
                    in_sub_table = true;
                }
            }
            continue;
        }
        if t != table || v != variant || in_sub_table {
            continue;
        }
        // The line's own key: `key = ...`, `"key" = ...` or dotted, `key.slice_idle = 0`.
        let assigns = toml_keys(line)
            .iter()
            .any(|k| !k.inline && (k.name == key || (!k.quoted && k.name.starts_with(&dotted))));
        if assigns {
            return Some(i + 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "name = \"x\"\njobfile = \"top\"\n\n[[table]]\ntitle = \"a\"\njobfile = \"a.fio\"\n\n[[table.variant]]\nlabel = \"one\"\nscheduler = \"cfq\"\n\n[[table.variant]]\nlabel = \"two\"\nscheduler = \"bfq\"\n[table.variant.iosched]\nslice_idle = 0\n\n[[table]]\ntitle = \"b\"\n[table.vars]\njobfile = \"not a key of the table\"\n[[table.variant]]\nscheduler=\"none\"\n";

    #[test]
    fn keys_are_found_in_their_table_and_variant() {
        assert_eq!(key_line(TEXT, None, None, "jobfile"), Some(2));
        assert_eq!(key_line(TEXT, Some(0), None, "jobfile"), Some(6));
        assert_eq!(key_line(TEXT, Some(0), Some(0), "scheduler"), Some(10));
        assert_eq!(key_line(TEXT, Some(0), Some(1), "scheduler"), Some(14));
        assert_eq!(key_line(TEXT, Some(0), Some(1), "iosched"), Some(15));
        assert_eq!(key_line(TEXT, Some(1), Some(0), "scheduler"), Some(23));
        // A dotted key, a quoted one, and an inline table's key that is not the table's.
        let text = "[[table]]\nvars = { jobfile = \"x\" }\n\"jobfile\" = \"a.fio\"\n[[table.variant]]\niosched.slice_idle = 0\n";
        assert_eq!(key_line(text, Some(0), None, "jobfile"), Some(3));
        assert_eq!(key_line(text, Some(0), Some(0), "iosched"), Some(5));
    }

    #[test]
    fn keys_not_written_there_are_not_found() {
        // In a sub-table of the table, in another variant, a prefix of another key.
        assert_eq!(key_line(TEXT, Some(1), None, "jobfile"), None);
        assert_eq!(key_line(TEXT, Some(0), Some(0), "iosched"), None);
        assert_eq!(key_line(TEXT, Some(0), Some(0), "schedule"), None);
        assert_eq!(key_line(TEXT, Some(2), None, "title"), None);
        assert_eq!(key_line(TEXT, None, None, "scheduler"), None);
    }
}
