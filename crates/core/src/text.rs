//! Where an error about an input file points: the line of a byte offset, and a parser's
//! message folded onto one line, so that every error elevator prints about a file is one
//! line naming the file and line (topologies, scenarios, sweep grids, the server's config),
//! and what a TOML line opens or assigns, for errors found after parsing that must still
//! name the line of their table or key.

/// The 1-based line of byte `offset` in `text` (an offset past the end: the last line).
pub fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// `message`'s lines, trimmed, without the empty ones, joined by spaces.
pub fn one_line(message: &str) -> String {
    message.split('\n').map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ")
}

/// The name of the table a TOML header line opens (`[[device]]` → `device`,
/// `[table.variant.iosched]` → `table.variant.iosched`), if it is one; a comment after it is
/// allowed.
pub fn toml_header(line: &str) -> Option<&str> {
    let l = line.trim();
    let inner = l.strip_prefix("[[").and_then(|r| r.split("]]").next());
    let inner = inner.or_else(|| l.strip_prefix('[').and_then(|r| r.split(']').next()))?;
    let name = inner.trim();
    (!name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.\"".contains(&b)))
        .then_some(name)
}

/// The key whose value is at byte `offset` of `text`: the last key its line assigns before
/// that column (an inline table's own keys included); on a line that assigns none (an array
/// written over several lines), the last key of the nearest line above that does, up to the
/// table's header.
pub fn toml_key_at(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    let line = &text[start..end];
    let column = offset - start;
    let mut best: Option<(usize, String)> = None;
    let mut from = 0;
    for key in toml_keys(line) {
        let Some(at) = line[from..].find(&key.name).map(|i| from + i) else { continue };
        from = at + key.name.len();
        if at < column && best.as_ref().is_none_or(|(b, _)| at >= *b) {
            best = Some((at, key.name));
        }
    }
    if let Some((_, key)) = best {
        return Some(key);
    }
    if !toml_keys(line).is_empty() || toml_header(line).is_some() {
        return None;
    }
    for above in text[..start].lines().rev() {
        if toml_header(above).is_some() {
            return None;
        }
        if let Some(key) = toml_keys(above).pop() {
            return Some(key.name);
        }
    }
    None
}

/// A TOML parser's `message` about the value at byte `offset`, as elevator prints it: the
/// 1-based line, and the message on one line led by the key the value is written under
/// (`` `rpm`: invalid type ``), unless the message names that key already.
pub fn toml_message_at(text: &str, offset: usize, message: &str) -> (usize, String) {
    let message = one_line(message);
    let keyed = match toml_key_at(text, offset).filter(|k| !message.contains(k.as_str())) {
        Some(key) => format!("`{key}`: {message}"),
        None => message,
    };
    (line_of(text, offset), keyed)
}

/// A key a TOML line assigns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TomlKey {
    /// As written, without quotes; a dotted key whole (`params.rpm`).
    pub name: String,
    /// Written in quotes (`"io.cost.qos"`: one name, not a dotted one).
    pub quoted: bool,
    /// Inside an inline table (`params = { rpm = 1 }`: `rpm`), not the line's own key.
    pub inline: bool,
}

/// The keys a TOML line assigns, in order: its own (`key = ...`, `"io.cost.qos" = ...`,
/// `params.rpm = ...`) and those of its inline tables (`params = { write_cache = false }`).
/// Strings are skipped and a `#` outside one ends the line; a line that is not an
/// assignment (a header, a continued array) gives none of its own.
pub fn toml_keys(line: &str) -> Vec<TomlKey> {
    let b = line.as_bytes();
    let mut keys = Vec::new();
    let mut i = 0;
    // Whether a key may start here: at the line's start, after `{` or `,`.
    let mut key_may_start = true;
    let mut depth = 0usize;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'#' {
            break;
        }
        if key_may_start {
            let start = i;
            let quoted = c == b'"';
            let name = if quoted {
                let end = line[i + 1..].find('"').map(|e| i + 1 + e);
                let Some(end) = end else { break };
                i = end + 1;
                &line[start + 1..end]
            } else {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b"_-.".contains(&b[i])) {
                    i += 1;
                }
                &line[start..i]
            };
            let after = line[i..].trim_start();
            if !name.is_empty() && after.starts_with('=') && !after.starts_with("==") {
                keys.push(TomlKey { name: name.to_string(), quoted, inline: depth > 0 });
            }
            key_may_start = false;
            if i == start {
                i += 1;
            }
            continue;
        }
        match c {
            b'"' | b'\'' => match line[i + 1..].find(c as char) {
                Some(e) => i += e + 2,
                None => break,
            },
            b'{' => {
                depth += 1;
                key_may_start = true;
                i += 1;
            }
            b',' => {
                key_may_start = depth > 0;
                i += 1;
            }
            b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            _ => i += 1,
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_lines_as_toml_writes_them() {
        let names = |l: &str| toml_keys(l).into_iter().map(|k| k.name).collect::<Vec<_>>();
        assert_eq!(names("a = 1"), ["a"]);
        assert_eq!(
            toml_keys("  \"io.cost.qos\" = \"8:0 x=1\""),
            [TomlKey { name: "io.cost.qos".into(), quoted: true, inline: false }]
        );
        assert_eq!(names("params.rpm = 1"), ["params.rpm"]);
        let inline = toml_keys("p = { a = \"x = 1, b = 2\", c = [1, 2] }");
        assert_eq!(
            inline.iter().map(|k| (k.name.as_str(), k.inline)).collect::<Vec<_>>(),
            [("p", false), ("a", true), ("c", true)]
        );
        // Array items are not keys: `[1, b = 2]` is no TOML, and `x = [a, b]` names no `b`.
        assert_eq!(names("x = [\"a\", \"b = 2\"], y = 1"), ["x"]);
        assert_eq!(names("# a = 1"), Vec::<String>::new());
        assert_eq!(names("a == 1"), Vec::<String>::new());
        assert_eq!(names("\"unterminated = 1"), Vec::<String>::new());
        assert_eq!(toml_header("[[device]]"), Some("device"));
        assert_eq!(toml_header(" [device.params] # x"), Some("device.params"));
        assert_eq!(toml_header("[1, 2]"), None);
        assert_eq!(toml_header("a = 1"), None);
    }

    #[test]
    fn the_key_a_value_is_written_under() {
        let line = "a = { b = 1, c = \"x\" }";
        assert_eq!(toml_key_at(line, 18).as_deref(), Some("c"));
        assert_eq!(toml_key_at(line, 10).as_deref(), Some("b"));
        assert_eq!(toml_key_at("x = 1\ndirty_ratio = -1\n", 20).as_deref(), Some("dirty_ratio"));
        assert_eq!(toml_key_at("[machine]", 3), None);
        let array = "[grid]\nrw = [\n  \"read\",\n  5,\n]\n";
        assert_eq!(toml_key_at(array, array.find('5').unwrap()).as_deref(), Some("rw"));
        assert_eq!(toml_key_at("[a]\n  5,\n", 6), None, "nothing assigned in the table");
    }

    #[test]
    fn lines_and_messages() {
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 2), 2);
        assert_eq!(line_of("a\nb\nc", 99), 3);
        assert_eq!(
            one_line("unknown field `x`\n\n  expected one of `a`\n"),
            "unknown field `x` expected one of `a`"
        );
    }

    #[test]
    fn a_parser_s_message_names_the_key_once() {
        let text = "[a]\nrpm = \"fast\"\n";
        let at = text.find("\"fast").unwrap();
        assert_eq!(
            toml_message_at(text, at, "invalid type: string,\n expected u32"),
            (2, "`rpm`: invalid type: string, expected u32".to_string())
        );
        assert_eq!(
            toml_message_at(text, at, "unknown field `rpm`"),
            (2, "unknown field `rpm`".to_string())
        );
    }
}
