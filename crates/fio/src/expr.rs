//! fio's value grammar beyond plain numbers: the keywords `$pagesize`, `$ncpus` and
//! `$mb_memory`, and arithmetic.
//!
//! fio replaces the keywords with the machine's values (here: the simulated machine's, handed
//! in as [`Keywords`]) and, when a keyword was replaced and the value has `+ - * /` in it,
//! hands the value to `bc` (integer arithmetic); a value that starts with `(` goes to fio's own
//! expression parser (`(4k*2)`). Both cases are one evaluator here: integers with fio's size
//! suffixes, `+ - * / % ^` and parentheses, checked arithmetic. The result replaces the value
//! as a decimal number, so every option then reads it the way it reads a number.
//!
//! Bounded: at most [`MAX_EXPR_BYTES`] of text and [`MAX_EXPR_DEPTH`] nested parentheses;
//! division by zero, overflow and an unknown `$word` are errors naming what went wrong.

use crate::units::parse_size;

/// Longest expression evaluated (fio hands at most 100 characters to `bc`).
pub const MAX_EXPR_BYTES: usize = 256;
/// Deepest nesting of parentheses.
pub const MAX_EXPR_DEPTH: usize = 32;

/// The values fio substitutes for its keywords, from the machine the jobs run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keywords {
    /// `$pagesize`: bytes per page.
    pub pagesize: u64,
    /// `$ncpus`: CPUs online.
    pub ncpus: u64,
    /// `$mb_memory`: MiB of memory.
    pub mb_memory: u64,
}

impl Default for Keywords {
    /// The built-in machine: 4 KiB pages, 2 CPUs, 4 GiB.
    fn default() -> Self {
        Keywords { pagesize: 4096, ncpus: 2, mb_memory: 4096 }
    }
}

const KEYWORD_NAMES: &str = "$pagesize, $ncpus, $mb_memory";

/// Applies fio's keyword and arithmetic rules to one option value: `Ok(None)` when the value
/// is not an expression (use it as written), `Ok(Some(decimal))` with the result otherwise.
pub fn rewrite(value: &str, keywords: &Keywords, kb_base: u64) -> Result<Option<String>, String> {
    let trimmed = value.trim();
    let has_keyword = trimmed.contains('$');
    if !has_keyword && !trimmed.starts_with('(') {
        return Ok(None);
    }
    if trimmed.len() > MAX_EXPR_BYTES {
        return Err(format!(
            "the expression is {} bytes long; at most {MAX_EXPR_BYTES} (MAX_EXPR_BYTES)",
            trimmed.len()
        ));
    }
    let substituted = substitute(trimmed, keywords)?;
    let is_math = substituted.starts_with('(') || substituted.contains(['+', '-', '*', '/', '%']);
    if !is_math {
        return Ok(Some(substituted));
    }
    let n = evaluate(&substituted, kb_base)?;
    if n < 0 {
        return Err(format!("`{trimmed}` comes to {n}; a value of 0 or more is expected"));
    }
    Ok(Some(n.to_string()))
}

/// Replaces `$pagesize`, `$ncpus` and `$mb_memory`; any other `$word` is an error (`${VAR}`
/// was expanded, or dropped, before this).
fn substitute(text: &str, keywords: &Keywords) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let end =
            after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
        let word = &after[..end];
        let n = match word {
            "pagesize" => keywords.pagesize,
            "ncpus" => keywords.ncpus,
            "mb_memory" => keywords.mb_memory,
            _ => {
                return Err(format!(
                    "`${word}` is not defined (fio's keywords are {KEYWORD_NAMES}; environment variables are written ${{NAME}})"
                ))
            }
        };
        out.push_str(&n.to_string());
        rest = &after[end..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Evaluates an integer expression: numbers with size suffixes, `+ - * / % ^`, parentheses.
pub fn evaluate(text: &str, kb_base: u64) -> Result<i128, String> {
    let mut p = Parser { text, pos: 0, depth: 0, kb_base };
    let v = p.sum()?;
    p.skip_space();
    if p.pos != text.len() {
        return Err(format!("`{text}`: unexpected `{}` in the expression", &text[p.pos..]));
    }
    Ok(v)
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    depth: usize,
    kb_base: u64,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.text[self.pos..].starts_with([' ', '\t']) {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_space();
        self.text[self.pos..].chars().next()
    }

    fn overflow(&self) -> String {
        format!("`{}` overflows", self.text)
    }

    fn sum(&mut self) -> Result<i128, String> {
        let mut v = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek() {
            self.pos += 1;
            let r = self.product()?;
            v = if op == '+' { v.checked_add(r) } else { v.checked_sub(r) }
                .ok_or_else(|| self.overflow())?;
        }
        Ok(v)
    }

    fn product(&mut self) -> Result<i128, String> {
        let mut v = self.power()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek() {
            self.pos += 1;
            let r = self.power()?;
            v = match op {
                '*' => v.checked_mul(r).ok_or_else(|| self.overflow())?,
                _ if r == 0 => return Err(format!("`{}` divides by zero", self.text)),
                '/' => v / r,
                _ => v % r,
            };
        }
        Ok(v)
    }

    fn power(&mut self) -> Result<i128, String> {
        let base = self.unary()?;
        if self.peek() == Some('^') {
            self.pos += 1;
            let exp = self.power()?;
            let exp = u32::try_from(exp)
                .map_err(|_| format!("`{}`: the exponent must be 0 or more", self.text))?;
            return base.checked_pow(exp).ok_or_else(|| self.overflow());
        }
        Ok(base)
    }

    fn unary(&mut self) -> Result<i128, String> {
        match self.peek() {
            Some('-') => {
                self.pos += 1;
                Ok(-self.unary()?)
            }
            Some('+') => {
                self.pos += 1;
                self.unary()
            }
            Some('(') => {
                self.depth += 1;
                if self.depth > MAX_EXPR_DEPTH {
                    return Err(format!(
                        "the expression nests deeper than {MAX_EXPR_DEPTH} parentheses (MAX_EXPR_DEPTH)"
                    ));
                }
                self.pos += 1;
                let v = self.sum()?;
                if self.peek() != Some(')') {
                    return Err(format!("`{}`: a `)` is missing", self.text));
                }
                self.pos += 1;
                self.depth -= 1;
                Ok(v)
            }
            _ => {
                let start = self.pos;
                let rest = &self.text[start..];
                let end = rest.find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(rest.len());
                if end == 0 {
                    return Err(format!(
                        "`{}`: a number is expected at `{}`",
                        self.text,
                        if rest.is_empty() { "the end" } else { rest }
                    ));
                }
                self.pos += end;
                parse_size(&rest[..end], self.kb_base).map(i128::from)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kw() -> Keywords {
        Keywords { pagesize: 4096, ncpus: 8, mb_memory: 1024 }
    }

    #[test]
    fn keywords_and_bc_style_math() {
        assert_eq!(rewrite("$pagesize", &kw(), 1024), Ok(Some("4096".into())));
        assert_eq!(rewrite("$ncpus", &kw(), 1024), Ok(Some("8".into())));
        assert_eq!(
            rewrite("5*1024*1024*$mb_memory/8", &kw(), 1024),
            Ok(Some((5u64 * 1024 * 1024 * 1024 / 8).to_string()))
        );
        assert_eq!(
            rewrite("8*1024*$pagesize", &kw(), 1024),
            Ok(Some((8 * 1024 * 4096).to_string()))
        );
        assert_eq!(rewrite("4k", &kw(), 1024), Ok(None));
        assert_eq!(rewrite("4k-8k", &kw(), 1024), Ok(None));
    }

    #[test]
    fn parenthesised_expressions_with_units() {
        assert_eq!(rewrite("(4k*2)", &kw(), 1024), Ok(Some("8192".into())));
        assert_eq!(rewrite("((1+2)*3)^2", &kw(), 1024), Ok(Some("81".into())));
        assert_eq!(rewrite("(10 % 4 - 1)", &kw(), 1024), Ok(Some("1".into())));
        assert_eq!(rewrite("(-3+5)", &kw(), 1024), Ok(Some("2".into())));
    }

    #[test]
    fn bad_expressions_say_why() {
        assert!(rewrite("(1/0)", &kw(), 1024).unwrap_err().contains("divides by zero"));
        assert!(rewrite("$pagesize%0", &kw(), 1024).unwrap_err().contains("divides by zero"));
        assert!(rewrite("$nope*2", &kw(), 1024).unwrap_err().contains("`$nope` is not defined"));
        assert!(rewrite("(1+2", &kw(), 1024).unwrap_err().contains("`)` is missing"));
        assert!(rewrite("(1-2)", &kw(), 1024).unwrap_err().contains("0 or more"));
        assert!(rewrite("(2^200)", &kw(), 1024).unwrap_err().contains("overflows"));
        assert!(rewrite("(1+)", &kw(), 1024).unwrap_err().contains("number is expected"));
        let deep = format!("{}1{}", "(".repeat(40), ")".repeat(40));
        assert!(rewrite(&deep, &kw(), 1024).unwrap_err().contains("MAX_EXPR_DEPTH"));
        let long = format!("({})", "1+".repeat(200) + "1");
        assert!(rewrite(&long, &kw(), 1024).unwrap_err().contains("MAX_EXPR_BYTES"));
    }
}
