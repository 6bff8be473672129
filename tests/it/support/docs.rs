//! Reading the commands of the README and docs/*.md and checking what they print: the
//! fenced blocks of a section, their shell commands (backslash continuations joined,
//! comments split off), and a masked comparison of printed text against a ```text block
//! (`...` stands for whatever varies: within a line any text, alone on a line any number
//! of lines; every run of digits matches any run of digits).
//!
//! The tests that use it run each command as written, in a directory where a first-run
//! `searchgate serve` keeps its `./data`, with `cargo run --release --` meaning the
//! binary under test (what `cargo run` would run).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The text of `doc` from the heading line `heading` (exact, e.g. "### Metrics and
/// latency") to the next heading of the same or a higher level (a `# comment` inside a
/// fenced block is not a heading).
pub fn section<'a>(doc: &'a str, heading: &str) -> &'a str {
    let level = heading.chars().take_while(|c| *c == '#').count();
    let start = doc
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no section {heading:?}"));
    let body = &doc[start + heading.len() + 2..];
    let end = body
        .lines()
        .scan((0usize, false), |(pos, fenced), l| {
            let at = *pos;
            *pos += l.len() + 1;
            if l.trim_start().starts_with("```") {
                *fenced = !*fenced;
            }
            Some((at, l, *fenced))
        })
        .find(|(_, l, fenced)| {
            let n = l.chars().take_while(|c| *c == '#').count();
            !fenced && n > 0 && n <= level && l[n..].starts_with(' ')
        })
        .map_or(body.len(), |(at, _, _)| at);
    &body[..end]
}

/// The fenced blocks of language `lang` in `text`, in order.
pub fn blocks<'a>(text: &'a str, lang: &str) -> Vec<&'a str> {
    let fence = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(&fence) {
        let body = &rest[i + fence.len()..];
        let end = body.find("```").expect("a closed fence");
        out.push(&body[..end]);
        rest = &body[end + 3..];
    }
    out
}

/// One command of a block: the shell text, and its comment (after ` #`, outside quotes).
#[derive(Debug, Clone, PartialEq)]
pub struct DocCommand {
    pub text: String,
    pub comment: String,
}

/// The commands of a shell block: continuation lines joined, comments split off, blank
/// lines dropped.
pub fn commands(block: &str) -> Vec<DocCommand> {
    let mut out = Vec::new();
    let mut pending = String::new();
    let mut comment = String::new();
    for line in block.lines() {
        let (code, c) = split_comment(line);
        if !c.is_empty() {
            comment = c.to_string();
        }
        let code = code.trim_end();
        if let Some(cont) = code.strip_suffix('\\') {
            pending.push_str(cont.trim());
            pending.push(' ');
            continue;
        }
        pending.push_str(code.trim_start());
        let text = std::mem::take(&mut pending).trim().to_string();
        if !text.is_empty() {
            out.push(DocCommand {
                text,
                comment: std::mem::take(&mut comment),
            });
        }
        comment.clear();
    }
    out
}

/// `code # comment` split at the first `#` that starts a shell comment (after blank, not
/// inside quotes).
fn split_comment(line: &str) -> (&str, &str) {
    let (mut single, mut double) = (false, false);
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => {
                return (&line[..i], line[i + 1..].trim());
            }
            _ => {}
        }
        prev = c;
    }
    (line, "")
}

/// `s` with every run of ASCII digits replaced by one `0`.
fn digits_masked(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_digits = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('0');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

/// Whether `line` matches the documented `pattern` (`...` is any text, digits masked). The
/// letters and digits just before a `...` are an example's start (`u8w...` abbreviates a
/// username): they stand for any text too.
fn line_matches(pattern: &str, line: &str) -> bool {
    let (pattern, line) = (digits_masked(pattern), digits_masked(line));
    let mut parts: Vec<&str> = pattern.split("...").collect();
    let last = parts.len() - 1;
    for p in &mut parts[..last] {
        *p = p.trim_end_matches(|c: char| c.is_ascii_alphanumeric());
    }
    let mut rest = line.as_str();
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    rest.is_empty()
}

/// Checks printed `output` against the documented `expected` text, line by line, trailing
/// blanks ignored; a line `...` in `expected` stands for any number of lines. The error
/// shows both.
pub fn check_output(expected: &str, output: &str) -> Result<(), String> {
    let want: Vec<&str> = expected.lines().map(str::trim_end).collect();
    let got: Vec<&str> = output.lines().map(str::trim_end).collect();
    if fits(&want, &got) {
        Ok(())
    } else {
        Err(format!(
            "the output does not match the docs\n--- documented ---\n{expected}\n--- printed ---\n{output}"
        ))
    }
}

fn fits(want: &[&str], got: &[&str]) -> bool {
    match want.split_first() {
        None => got.iter().all(|l| l.is_empty()),
        Some((&"...", rest)) => (0..=got.len()).any(|skip| fits(rest, &got[skip..])),
        Some((w, rest)) => match got.split_first() {
            Some((g, grest)) => line_matches(w, g) && fits(rest, grest),
            None => false,
        },
    }
}

/// Runs documented commands as a newcomer does, in `dir`, through `bash -c` (the README's
/// `$'...'` quoting is bash's), with `env`
/// and with `cargo run --release --` meaning the binary under test.
pub struct Shell {
    pub dir: PathBuf,
    pub env: Vec<(String, String)>,
}

impl Shell {
    pub fn new(dir: &Path) -> Shell {
        Shell {
            dir: dir.to_path_buf(),
            env: Vec::new(),
        }
    }

    /// Sets an environment variable of the commands (what an `export` line of the docs
    /// does in the reader's shell).
    pub fn set(&mut self, key: &str, value: &str) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.into(), value.into()));
    }

    /// The command as it runs: `cargo run --release --`, and `searchgate` where a command
    /// starts with it (the docs' spelling for an installed binary), replaced by the binary.
    pub fn resolve(cmd: &str) -> String {
        let bin = format!("'{}'", env!("CARGO_BIN_EXE_searchgate"));
        let cmd = match cmd.strip_prefix("searchgate ") {
            Some(rest) => format!("{bin} {rest}"),
            None => cmd.to_string(),
        };
        cmd.replace("cargo run --release --", &bin)
    }

    /// Runs `cmd` (at most `secs` seconds: `timeout` ends it).
    pub fn run(&self, cmd: &str, secs: u32) -> Output {
        let mut c = Command::new("timeout");
        c.arg(secs.to_string())
            .arg("bash")
            .arg("-c")
            .arg(Self::resolve(cmd))
            .current_dir(&self.dir);
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c.output().expect("run sh")
    }
}

/// stdout and stderr of `o`, for messages.
pub fn shown(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn a_comment_in_a_block_does_not_end_a_section() {
    let doc = "# Doc\n## One\n```sh\na\n# a comment\nb\n```\nafter\n## Two\nx\n";
    let one = section(doc, "## One");
    assert!(one.contains("# a comment\nb\n```\nafter"), "{one}");
    assert!(!one.contains("Two"), "{one}");
    assert_eq!(commands(blocks(one, "sh")[0]).len(), 2);
}

#[test]
fn commands_are_read_as_a_shell_reads_them() {
    let block = "export URL='https://u:p@h:1' CA=./data/ca.pem   # the URL\n\
                 curl -X PUT \"$URL/books\" \\\n     -d '{\"a\":\"#not\"}'\n\n\
                 curl --cacert $CA \"$URL/_snapshot\"          # 501: not exposed\n";
    let c = commands(block);
    assert_eq!(c.len(), 3);
    assert_eq!(c[0].text, "export URL='https://u:p@h:1' CA=./data/ca.pem");
    assert_eq!(c[0].comment, "the URL");
    assert_eq!(
        c[1].text,
        "curl -X PUT \"$URL/books\" -d '{\"a\":\"#not\"}'"
    );
    assert_eq!(c[1].comment, "");
    assert_eq!(c[2].comment, "501: not exposed");
}

#[test]
fn printed_text_is_matched_with_masks() {
    let doc = "id              cq3k9x0m2a7bz\nstate           running\n...\nurl             https://u8w...:Zt4...@books-....local.localhost:9243\n";
    let out = "id              abc\nstate           running\nplan  sandbox\nmode normal\nurl             https://Xy1:Pw2@books-zz9.local.localhost:41234\n";
    assert!(check_output(doc, out).is_err(), "the id is not masked");
    let doc = doc.replace("cq3k9x0m2a7bz", "...");
    check_output(&doc, out).unwrap();
    let doc2 = doc.replace("running", "stopped");
    assert!(check_output(&doc2, out).is_err());
    assert!(line_matches(
        "listening http=127.0.0.1:9200",
        "listening http=127.0.0.1:35001"
    ));
    assert!(!line_matches("a ... b", "a c"));
    assert!(line_matches(
        "  https://k3x...:Qm9...@localhost:9243/",
        "  https://hlb6:p0E@localhost:41/"
    ));
    assert!(!line_matches(
        "  https://k3x...:Qm9...@localhost:9243/",
        "  https://hlb6@localhost:41/"
    ));
}
