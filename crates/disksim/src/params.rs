//! Generic reader for DiskSim's nested parameter syntax (`type name { key = value, ... }`,
//! lists `[ ... ]`, `source FILE` includes, `#` comments) into a tree that keeps file and
//! line for every node, so typed extraction can report precise errors and unknown blocks
//! survive untouched. Mirrors the grammar of DiskSim's libparam (lexer/parser), paraphrased.

use crate::error::DiskSimError;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const MAX_DEPTH: usize = 64;
const MAX_INCLUDE_DEPTH: usize = 16;

/// A value with the place it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Node<T> {
    pub value: T,
    pub file: Arc<str>,
    pub line: usize,
}

/// A parameter value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    /// A bare word or phrase (e.g. `trackSwitchPlusRotation`, `barracuda.seek`).
    Str(String),
    Block(Block),
    List(Vec<Node<Value>>),
    /// `words [ ... ]` inside a list, e.g. topology entries `disksim_bus bus0 [ ... ]`.
    Tagged(String, Vec<Node<Value>>),
}

impl Value {
    /// Numeric value as f64 (ints widen).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }
    /// Integer value (floats with no fraction are accepted).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(*f as i64),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_block(&self) -> Option<&Block> {
        match self {
            Value::Block(b) => Some(b),
            _ => None,
        }
    }
    pub fn as_list(&self) -> Option<&[Node<Value>]> {
        match self {
            Value::List(l) => Some(l),
            _ => None,
        }
    }
}

/// `type_name [name] { key = value, ... }`.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub type_name: String,
    pub name: Option<String>,
    pub params: Vec<(Node<String>, Node<Value>)>,
    pub file: Arc<str>,
    pub line: usize,
}

impl Block {
    /// First parameter whose key matches (case-sensitive, whitespace-normalised).
    pub fn get(&self, key: &str) -> Option<&Node<Value>> {
        self.params.iter().find(|(k, _)| k.value == key).map(|(_, v)| v)
    }
    /// Display name used in errors.
    pub fn label(&self) -> String {
        match &self.name {
            Some(n) => format!("{} {}", self.type_name, n),
            None => self.type_name.clone(),
        }
    }
}

/// A top-level statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Block(Block),
    /// Any other statement: `instantiate [ a ] as B`, `topology t n [ ... ]`, ...
    Statement {
        words: String,
        list: Vec<Node<Value>>,
        trailing: Option<String>,
        file: Arc<str>,
        line: usize,
    },
}

/// A parsed file with its `source` includes expanded in place.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParamFile {
    pub items: Vec<Item>,
}

impl ParamFile {
    /// All top-level blocks.
    pub fn blocks(&self) -> impl Iterator<Item = &Block> {
        self.items.iter().filter_map(|i| match i {
            Item::Block(b) => Some(b),
            _ => None,
        })
    }
    /// Top-level blocks of a given type (e.g. `disksim_disk`).
    pub fn blocks_of<'a>(&'a self, type_name: &'a str) -> impl Iterator<Item = &'a Block> + 'a {
        self.blocks().filter(move |b| b.type_name == type_name)
    }
    /// Top-level block by name.
    pub fn block_named(&self, name: &str) -> Option<&Block> {
        self.blocks().find(|b| b.name.as_deref() == Some(name))
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    LBrace,
    RBrace,
    LBrack,
    RBrack,
    Comma,
    Eq,
    Text(String),
}

fn lex(text: &str) -> Vec<(Tok, usize)> {
    let mut out = Vec::with_capacity(text.len() / 8);
    for (ln, raw) in text.lines().enumerate() {
        let line = ln + 1;
        let body = raw.find('#').map_or(raw, |i| &raw[..i]);
        // The punctuation is ASCII: cutting at it keeps the text between valid UTF-8.
        let mut start = 0;
        for (i, b) in body.bytes().enumerate() {
            let t = match b {
                b'{' => Tok::LBrace,
                b'}' => Tok::RBrace,
                b'[' => Tok::LBrack,
                b']' => Tok::RBrack,
                b',' => Tok::Comma,
                b'=' => Tok::Eq,
                _ => continue,
            };
            text_token(&body[start..i], line, &mut out);
            out.push((t, line));
            start = i + 1;
        }
        text_token(&body[start..], line, &mut out);
    }
    out
}

/// The text between two punctuation marks as one token, its words joined by single spaces
/// (none when it is blank). Most are one word or words one space apart: those are copied
/// as they are, without splitting and joining.
fn text_token(s: &str, line: usize, out: &mut Vec<(Tok, usize)>) {
    let t = s.trim();
    if t.is_empty() {
        return;
    }
    let spaced_once = t.bytes().all(|b| b.is_ascii() && (b == b' ' || !b.is_ascii_whitespace()))
        && !t.contains("  ");
    let t = if spaced_once {
        t.to_string()
    } else {
        t.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    out.push((Tok::Text(t), line));
}

struct Parser<'a> {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    file: Arc<str>,
    dir: Option<&'a Path>,
    include_depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.0)
    }
    fn line(&self) -> usize {
        self.toks.get(self.pos).or_else(|| self.toks.last()).map(|t| t.1).unwrap_or(1)
    }
    fn err(&self, msg: impl Into<String>) -> DiskSimError {
        DiskSimError::Syntax { file: self.file.to_string(), line: self.line(), msg: msg.into() }
    }
    /// The next token, moved out: a step back after `next` only reports an error at that
    /// token's line, which stays.
    fn next(&mut self) -> Option<(Tok, usize)> {
        let (t, line) = self.toks.get_mut(self.pos)?;
        self.pos += 1;
        Some((std::mem::replace(t, Tok::Comma), *line))
    }

    fn top(&mut self, out: &mut ParamFile) -> Result<(), DiskSimError> {
        while let Some((tok, line)) = self.next() {
            let words = match tok {
                Tok::Text(w) => w,
                Tok::Comma => continue,
                other => {
                    self.pos -= 1;
                    return Err(self.err(format!("unexpected `{}` at top level", tok_str(&other))));
                }
            };
            if let Some(rest) = words.strip_prefix("source ") {
                let inc = self.include(rest.trim(), line)?;
                out.items.extend(inc.items);
                continue;
            }
            match self.peek() {
                Some(Tok::LBrace) => {
                    self.pos += 1;
                    let b = self.block_body(&words, line, 0)?;
                    out.items.push(Item::Block(b));
                }
                Some(Tok::LBrack) => {
                    self.pos += 1;
                    let list = self.list_body(0)?;
                    let mut trailing = None;
                    if let Some(Tok::Text(t)) = self.peek() {
                        if t.starts_with("as ") || t == "as" {
                            trailing = Some(t.clone());
                            self.pos += 1;
                        }
                    }
                    out.items.push(Item::Statement {
                        words,
                        list,
                        trailing,
                        file: self.file.clone(),
                        line,
                    });
                }
                _ => out.items.push(Item::Statement {
                    words,
                    list: Vec::new(),
                    trailing: None,
                    file: self.file.clone(),
                    line,
                }),
            }
        }
        Ok(())
    }

    fn include(&self, name: &str, line: usize) -> Result<ParamFile, DiskSimError> {
        let Some(dir) = self.dir else {
            return Err(DiskSimError::Syntax {
                file: self.file.to_string(),
                line,
                msg: format!("`source {name}` needs a directory to resolve against"),
            });
        };
        if self.include_depth >= MAX_INCLUDE_DEPTH {
            return Err(DiskSimError::Syntax {
                file: self.file.to_string(),
                line,
                msg: format!("`source {name}`: includes nested too deeply (cycle?)"),
            });
        }
        let path = dir.join(name);
        let text = std::fs::read_to_string(&path).map_err(|e| DiskSimError::Syntax {
            file: self.file.to_string(),
            line,
            msg: format!("`source {}`: {e}", path.display()),
        })?;
        parse_inner(&text, &path, self.include_depth + 1)
    }

    fn block_body(
        &mut self,
        header: &str,
        line: usize,
        depth: usize,
    ) -> Result<Block, DiskSimError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        let mut it = header.splitn(2, ' ');
        let type_name = it.next().unwrap_or_default().to_string();
        let name = it.next().map(|s| s.trim().to_string());
        let mut params = Vec::new();
        loop {
            match self.next() {
                None => {
                    return Err(DiskSimError::Syntax {
                        file: self.file.to_string(),
                        line,
                        msg: format!("block `{header}` is never closed"),
                    })
                }
                Some((Tok::RBrace, _)) => break,
                Some((Tok::Comma, _)) => continue,
                Some((Tok::Text(key), kline)) => {
                    if !matches!(self.next(), Some((Tok::Eq, _))) {
                        self.pos = self.pos.saturating_sub(1);
                        return Err(DiskSimError::Syntax {
                            file: self.file.to_string(),
                            line: kline,
                            msg: format!("expected `=` after key `{key}`"),
                        });
                    }
                    let v = self.value(depth + 1, Some(&key))?;
                    params.push((Node { value: key, file: self.file.clone(), line: kline }, v));
                }
                Some((t, _)) => {
                    self.pos -= 1;
                    return Err(
                        self.err(format!("unexpected `{}` in block `{header}`", tok_str(&t)))
                    );
                }
            }
        }
        Ok(Block { type_name, name, params, file: self.file.clone(), line })
    }

    fn list_body(&mut self, depth: usize) -> Result<Vec<Node<Value>>, DiskSimError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        let start = self.line();
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None => {
                    return Err(DiskSimError::Syntax {
                        file: self.file.to_string(),
                        line: start,
                        msg: "list `[` is never closed".into(),
                    })
                }
                Some(Tok::RBrack) => {
                    self.pos += 1;
                    break;
                }
                Some(Tok::Comma) => {
                    self.pos += 1;
                }
                _ => out.push(self.value(depth + 1, None)?),
            }
        }
        Ok(out)
    }

    fn value(&mut self, depth: usize, key: Option<&str>) -> Result<Node<Value>, DiskSimError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        let line = self.line();
        let file = self.file.clone();
        let v = match self.next() {
            Some((Tok::LBrace, l)) => Value::Block(self.block_body("", l, depth)?),
            Some((Tok::LBrack, _)) => Value::List(self.list_body(depth)?),
            Some((Tok::Text(w), l)) => match self.peek() {
                Some(Tok::LBrace) => {
                    self.pos += 1;
                    Value::Block(self.block_body(&w, l, depth)?)
                }
                Some(Tok::LBrack) => {
                    self.pos += 1;
                    Value::Tagged(w, self.list_body(depth)?)
                }
                _ => {
                    if let Some(rest) = w.strip_prefix("source ") {
                        // `Model = source x.model`: the included file's first block.
                        let inc = self.include(rest.trim(), l)?;
                        match inc.items.into_iter().next() {
                            Some(Item::Block(b)) => Value::Block(b),
                            _ => {
                                return Err(DiskSimError::Syntax {
                                    file: self.file.to_string(),
                                    line: l,
                                    msg: format!("`source {rest}` holds no block"),
                                })
                            }
                        }
                    } else {
                        scalar(&w)
                    }
                }
            },
            Some((t, _)) => {
                self.pos -= 1;
                return Err(self.err(match key {
                    Some(k) => format!("expected a value for `{k}`, found `{}`", tok_str(&t)),
                    None => format!("expected a value, found `{}`", tok_str(&t)),
                }));
            }
            None => {
                return Err(self.err(match key {
                    Some(k) => format!("missing value for `{k}` at end of file"),
                    None => "missing value at end of file".into(),
                }))
            }
        };
        Ok(Node { value: v, file, line })
    }
}

fn tok_str(t: &Tok) -> &str {
    match t {
        Tok::LBrace => "{",
        Tok::RBrace => "}",
        Tok::LBrack => "[",
        Tok::RBrack => "]",
        Tok::Comma => ",",
        Tok::Eq => "=",
        Tok::Text(s) => s,
    }
}

fn scalar(w: &str) -> Value {
    if let Ok(i) = w.parse::<i64>() {
        return Value::Int(i);
    }
    let looks_numeric =
        w.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'))
            && w.chars().any(|c| c.is_ascii_digit());
    if looks_numeric {
        if let Ok(f) = w.parse::<f64>() {
            return Value::Float(f);
        }
    }
    Value::Str(w.to_string())
}

fn parse_inner(text: &str, path: &Path, depth: usize) -> Result<ParamFile, DiskSimError> {
    let mut p = Parser {
        toks: lex(text),
        pos: 0,
        file: Arc::from(path.display().to_string()),
        dir: path.parent(),
        include_depth: depth,
    };
    let mut out = ParamFile::default();
    p.top(&mut out)?;
    Ok(out)
}

/// Parse text; `file_name` is used in errors and `source` includes are refused.
pub fn parse_str(text: &str, file_name: &str) -> Result<ParamFile, DiskSimError> {
    let mut p =
        Parser { toks: lex(text), pos: 0, file: Arc::from(file_name), dir: None, include_depth: 0 };
    let mut out = ParamFile::default();
    p.top(&mut out)?;
    Ok(out)
}

/// Parse a file, expanding `source` includes relative to its directory.
pub fn parse_file(path: &Path) -> Result<ParamFile, DiskSimError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| DiskSimError::Io { path: PathBuf::from(path), source: e })?;
    parse_inner(&text, path, 0)
}
