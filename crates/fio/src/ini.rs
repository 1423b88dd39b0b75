//! The job file's line structure: `[section]` headers, `key=value` and bare-flag lines,
//! `;`/`#` comments, `include FILE` and `${VAR}` expansion.
//!
//! This layer knows nothing about options; it flattens a file and everything it includes into
//! one list of [`Item`]s, each remembering the file and line it came from, so the option layer
//! can name them in messages.

use std::path::{Path, PathBuf};

use crate::job::{ParseError, SourceLocation};

/// How deep `include` may nest. Catches cycles the path check cannot see (text given to
/// [`crate::parse_str`] has no path of its own).
pub const MAX_INCLUDE_DEPTH: usize = 32;
/// How many files one job file may include in all (a file included twice counts twice):
/// bounds an include bomb that stays within the depth (30 files each including the next
/// twice is 2^30 reads).
pub const MAX_INCLUDES: usize = 256;
/// Bytes of job-file text read in all, the job file and everything it includes.
pub const MAX_JOB_TEXT_BYTES: u64 = 16 << 20;
/// `[sections]` in one job file.
pub const MAX_SECTIONS: usize = 4096;

/// One meaningful line of a job file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// `[name]`.
    Section { name: String, location: SourceLocation },
    /// `key=value`, or a bare `key` (value `None`), after `${VAR}` expansion; `written` is
    /// the value before expansion when that changed it, for error messages; `included`: the
    /// line is from an included file, whose text messages do not quote unless it is a fio
    /// option.
    Option {
        key: String,
        value: Option<String>,
        written: Option<String>,
        location: SourceLocation,
        included: bool,
    },
}

/// Environment lookup for `${VAR}`.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// State shared across one file and its includes.
pub struct Reader<'a> {
    env: Env<'a>,
    /// Canonical paths of the files being read, outermost first, for cycle detection.
    stack: Vec<PathBuf>,
    /// How many `include`s deep the current line is (0 = the top-level text).
    include_depth: usize,
    /// Files included so far, and bytes of text read (bounded by [`MAX_INCLUDES`] and
    /// [`MAX_JOB_TEXT_BYTES`]).
    includes: usize,
    text_bytes: u64,
    sections: usize,
    pub items: Vec<Item>,
}

impl<'a> Reader<'a> {
    pub fn new(env: Env<'a>) -> Self {
        Reader {
            env,
            stack: Vec::new(),
            include_depth: 0,
            includes: 0,
            text_bytes: 0,
            sections: 0,
            items: Vec::new(),
        }
    }

    /// Reads a file from disk; `including` is the `include` line that named it, if any.
    pub fn read_file(
        &mut self,
        path: &Path,
        including: Option<&SourceLocation>,
    ) -> Result<(), ParseError> {
        let location = including
            .cloned()
            .unwrap_or_else(|| SourceLocation { file: path.display().to_string(), line: 0 });
        let canonical = path.canonicalize().map_err(|e| ParseError {
            location: location.clone(),
            option: None,
            message: format!("cannot open job file `{}`: {e}", path.display()),
        })?;
        if let Some(pos) = self.stack.iter().position(|p| *p == canonical) {
            let chain: Vec<String> = self.stack[pos..]
                .iter()
                .chain(std::iter::once(&canonical))
                .map(|p| p.display().to_string())
                .collect();
            return Err(ParseError {
                location,
                option: None,
                message: format!("include cycle: {}", chain.join(" -> ")),
            });
        }
        // Bounded before reading: the size of what is read in all, job file and includes.
        let len = std::fs::metadata(&canonical).map(|m| m.len()).unwrap_or(0);
        if self.text_bytes.saturating_add(len) > MAX_JOB_TEXT_BYTES {
            return Err(ParseError {
                location,
                option: None,
                message: format!(
                    "`{}` would take the job file and its includes past {} MiB of text",
                    path.display(),
                    MAX_JOB_TEXT_BYTES >> 20
                ),
            });
        }
        let mut text = String::new();
        use std::io::Read as _;
        std::fs::File::open(path)
            .and_then(|f| {
                f.take(MAX_JOB_TEXT_BYTES - self.text_bytes + 1).read_to_string(&mut text)
            })
            .map_err(|e| ParseError {
                location: location.clone(),
                option: None,
                message: format!("cannot read job file `{}`: {e}", path.display()),
            })?;
        self.text_bytes += text.len() as u64;
        if self.text_bytes > MAX_JOB_TEXT_BYTES {
            return Err(ParseError {
                location,
                option: None,
                message: format!(
                    "the job file and its includes exceed {} MiB of text",
                    MAX_JOB_TEXT_BYTES >> 20
                ),
            });
        }
        let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let nested = usize::from(including.is_some());
        self.stack.push(canonical);
        self.include_depth += nested;
        let result = self.read_text(&text, &path.display().to_string(), &base_dir);
        self.include_depth -= nested;
        self.stack.pop();
        result
    }

    /// Counts text given directly (not read from a file) against [`MAX_JOB_TEXT_BYTES`].
    pub fn count_text(&mut self, text: &str, name: &str) -> Result<(), ParseError> {
        self.text_bytes = self.text_bytes.saturating_add(text.len() as u64);
        if self.text_bytes > MAX_JOB_TEXT_BYTES {
            return Err(ParseError {
                location: SourceLocation { file: name.to_string(), line: 0 },
                option: None,
                message: format!("the job text exceeds {} MiB", MAX_JOB_TEXT_BYTES >> 20),
            });
        }
        Ok(())
    }

    /// Reads job-file text; `name` labels its lines, `base_dir` anchors relative includes.
    pub fn read_text(&mut self, text: &str, name: &str, base_dir: &Path) -> Result<(), ParseError> {
        // An included file may be anything (`include /etc/shadow`): its lines are never
        // quoted in messages, only its name and the line number.
        let hidden = self.include_depth > 0;
        let quote = |line: &str| {
            if hidden {
                "this line (of an included file; its text is not shown)".to_string()
            } else {
                format!("`{line}`")
            }
        };
        for (index, raw) in text.lines().enumerate() {
            let location = SourceLocation {
                file: name.to_string(),
                line: u32::try_from(index + 1).unwrap_or(u32::MAX),
            };
            let line = strip_comment(raw).trim();
            if line.is_empty() {
                continue;
            }
            if let Some(rest) = line.strip_prefix('[') {
                let Some(inner) = rest.strip_suffix(']') else {
                    return Err(err(
                        location,
                        format!("section header {} has no closing `]`", quote(line)),
                    ));
                };
                let name = inner.trim();
                if self.include_depth > 0 {
                    return Err(err(
                        location,
                        "a section header in an included file: like fio, elevator allows no new sections in included files".into(),
                    ));
                }
                self.sections += 1;
                if self.sections > MAX_SECTIONS {
                    return Err(err(
                        location,
                        format!("more than {MAX_SECTIONS} sections in one job file"),
                    ));
                }
                if name.is_empty() {
                    return Err(err(location, "empty section name `[]`".into()));
                }
                self.items.push(Item::Section { name: name.to_string(), location });
                continue;
            }
            if let Some(target) = include_target(line) {
                let target = expand_env(target, self.env);
                if !self.items.iter().any(|i| matches!(i, Item::Section { .. })) {
                    return Err(err(
                        location,
                        format!("`include {target}` is outside any section; like fio, put it under [global] or a [job] header"),
                    ));
                }
                if self.include_depth >= MAX_INCLUDE_DEPTH {
                    return Err(err(
                        location,
                        format!("includes nest deeper than {MAX_INCLUDE_DEPTH} levels (an include cycle?)"),
                    ));
                }
                self.includes += 1;
                if self.includes > MAX_INCLUDES {
                    return Err(err(
                        location,
                        format!("more than {MAX_INCLUDES} includes in all (an include bomb?)"),
                    ));
                }
                let path = base_dir.join(&target);
                self.read_file(&path, Some(&location))?;
                continue;
            }
            // Like fio, `${VAR}` is expanded on the right of the `=` only.
            let (key, value, written) = match line.split_once('=') {
                Some((k, v)) => {
                    let expanded = expand_env(v, self.env).trim().to_string();
                    let written = (expanded != v.trim()).then(|| v.trim().to_string());
                    (k.trim(), Some(expanded), written)
                }
                None => (line, None, None),
            };
            if key.is_empty() {
                return Err(err(
                    location,
                    format!("{} has no option name before `=`", quote(line)),
                ));
            }
            let included = self.include_depth > 0;
            self.items.push(Item::Option {
                key: key.to_string(),
                value,
                written,
                location,
                included,
            });
        }
        Ok(())
    }
}

fn err(location: SourceLocation, message: String) -> ParseError {
    ParseError { location, option: None, message }
}

/// Cuts a line at the first `;` or `#`: fio treats both as starting a comment anywhere on a
/// line (`size=1m ; note` gives `1m`).
fn strip_comment(line: &str) -> &str {
    match line.find([';', '#']) {
        Some(pos) => &line[..pos],
        None => line,
    }
}

/// `include FILE` → `Some("FILE")`.
fn include_target(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("include")?;
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let target = rest.trim();
    (!target.is_empty()).then_some(target)
}

/// Replaces every `${VAR}` with its value. Like fio, an undefined variable becomes the empty
/// string; a `${` without a closing `}` is kept as written.
pub fn expand_env(text: &str, env: Env<'_>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) => {
                if let Some(value) = env(&after[..end]) {
                    out.push_str(&value);
                }
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn read(text: &str) -> Result<Vec<Item>, ParseError> {
        let mut reader = Reader::new(&no_env);
        reader.read_text(text, "t.fio", Path::new("."))?;
        Ok(reader.items)
    }

    fn opt(key: &str, value: Option<&str>, line: u32) -> Item {
        Item::Option {
            key: key.into(),
            value: value.map(Into::into),
            written: None,
            location: SourceLocation { file: "t.fio".into(), line },
            included: false,
        }
    }

    #[test]
    fn sections_options_flags_and_comments() {
        let items =
            read("; top\n# also\n[ job a ]\nbs = 4k ; trailing\n\ttime_based\nsize=1m#x\n\n")
                .unwrap();
        assert_eq!(
            items,
            vec![
                Item::Section {
                    name: "job a".into(),
                    location: SourceLocation { file: "t.fio".into(), line: 3 }
                },
                opt("bs", Some("4k"), 4),
                opt("time_based", None, 5),
                opt("size", Some("1m"), 6),
            ]
        );
    }

    #[test]
    fn empty_value_is_kept_distinct_from_bare_flag() {
        assert_eq!(read("[j]\nbs=\n").unwrap()[1], opt("bs", Some(""), 2));
    }

    #[test]
    fn malformed_lines() {
        assert!(read("[j\n").unwrap_err().message.contains("closing"));
        assert!(read("[ ]\n").unwrap_err().message.contains("empty section"));
        let e = read("[j]\n=4k\n").unwrap_err();
        assert_eq!(e.location.line, 2);
    }

    #[test]
    fn env_expansion() {
        let env = |k: &str| (k == "BS").then(|| "8k".to_string());
        assert_eq!(expand_env("bs=${BS}", &env), "bs=8k");
        assert_eq!(expand_env("a${BS}b${BS}", &env), "a8kb8k");
        assert_eq!(expand_env("x=${NOPE}y", &env), "x=y");
        assert_eq!(expand_env("x=${BS", &env), "x=${BS");
        assert_eq!(expand_env("x=$BS", &env), "x=$BS");
    }

    #[test]
    fn include_target_needs_whitespace() {
        assert_eq!(include_target("include  a.fio"), Some("a.fio"));
        assert_eq!(include_target("include"), None);
        assert_eq!(include_target("includes=1"), None);
    }

    #[test]
    fn missing_include_names_the_line() {
        let e = read("include x.fio\n").unwrap_err();
        assert!(e.message.contains("outside any section"));
        let e = read("[j]\ninclude /nonexistent/elevator/x.fio\n").unwrap_err();
        assert_eq!(e.location.line, 2);
        assert!(e.message.contains("/nonexistent/elevator/x.fio"));
    }
}
