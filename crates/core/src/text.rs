//! Where an error about an input file points: the line of a byte offset, and a parser's
//! message folded onto one line, so that every error elevator prints about a file is one
//! line naming the file and line (topologies, scenarios, sweep grids, the server's config).

/// The 1-based line of byte `offset` in `text` (an offset past the end: the last line).
pub fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// `message`'s lines, trimmed, without the empty ones, joined by spaces.
pub fn one_line(message: &str) -> String {
    message.split('\n').map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
