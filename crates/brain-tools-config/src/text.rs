//! The one escaping rule for text that goes to a person: a config's messages, the model
//! providers' findings and every line `mcp-tools` prints for people pass what a config, a
//! server or a store chose through [`escape`].
//!
//! Characters that would let that text drive the terminal or mislead the reader are
//! written as `\u{..}` escapes: C0 and C1 controls (ESC sequences, and U+009B, the
//! one-byte CSI), DEL, bidirectional embeddings, overrides, isolates and marks (a
//! "Trojan Source" reordering), zero-width and other invisible format characters
//! (including the Unicode tag characters that can hide text), and the line and paragraph
//! separators. Line breaks and tabs are kept only where the format is multi-line.

use std::fmt::Write as _;

/// `text` with every character a terminal could be driven or the reader misled by
/// written as `\u{..}`; `\n` and `\t` kept when `multiline` (a `\r\n` becomes `\n`).
pub fn escape(text: &str, multiline: bool) -> String {
    let text = if multiline {
        text.replace("\r\n", "\n")
    } else {
        text.to_owned()
    };
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let kept = multiline && (c == '\n' || c == '\t');
        if is_hidden(c) && !kept {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// `url` for a message or a log: its user info and its query (and fragment) replaced by
/// `<redacted>`, where credentials travel, then [`escape`]d. A string that does not parse
/// as a URL is cut the same way, so a malformed URL shows no more of itself:
/// `https://user:pw@host/mcp?key=v` is `https://<redacted>@host/mcp?<redacted>`.
pub fn redacted_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest))
            if !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            (Some(scheme), rest)
        }
        _ => (None, url),
    };
    let (authority, rest) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
    let (userinfo, host) = match authority.rsplit_once('@') {
        Some((_, host)) => ("<redacted>@", host),
        None => ("", authority),
    };
    let (path, tail) = rest.split_at(rest.find(['?', '#']).unwrap_or(rest.len()));
    let shown = format!(
        "{}{userinfo}{host}{path}{}",
        scheme
            .map(|scheme| format!("{scheme}://"))
            .unwrap_or_default(),
        if tail.is_empty() { "" } else { "?<redacted>" },
    );
    escape(&shown, false)
}

/// `word` as a POSIX shell reads it back, for a command a person is to paste: bare when
/// it is plain, else quoted (by `shlex`). A word holding a character [`is_hidden`] names
/// is written `$'...'` with those characters as `\xHH` bytes instead, which bash, zsh,
/// ksh and POSIX.1-2024 `sh` read back as the same word, so that the command holds no
/// raw control character for the terminal to obey. (A NUL, shown `\x00`, cannot be
/// passed to a program at all.)
pub fn shell_word(word: &str) -> String {
    if !word.chars().any(is_hidden) {
        // Only a NUL makes quoting fail, and a NUL is hidden.
        if let Ok(quoted) = shlex::try_quote(word) {
            return quoted.into_owned();
        }
    }
    let mut out = String::with_capacity(word.len() + 3);
    out.push_str("$'");
    for c in word.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            c if is_hidden(c) => {
                let mut bytes = [0u8; 4];
                for byte in c.encode_utf8(&mut bytes).bytes() {
                    let _ = write!(out, "\\x{byte:02x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Whether `c` is a control or a format character that changes what a terminal shows.
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            // Soft hyphen, Arabic letter mark, Mongolian vowel separator.
            '\u{ad}' | '\u{61c}' | '\u{180e}'
            // Zero-width space, joiners, LRM and RLM.
            | '\u{200b}'..='\u{200f}'
            // Line and paragraph separators; bidi embeddings and overrides.
            | '\u{2028}'..='\u{202e}'
            // Word joiner, invisible operators, bidi isolates, deprecated format controls.
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            // Byte order mark (zero-width no-break space), interlinear annotations.
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            // Tag characters: invisible, and able to carry hidden text.
            | '\u{e0000}'..='\u{e007f}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_user_info_and_query() {
        let cases = [
            ("https://host/mcp", "https://host/mcp"),
            ("https://host:8443/mcp/", "https://host:8443/mcp/"),
            (
                "https://user:hunter2@host/mcp?key=s3cret#x",
                "https://<redacted>@host/mcp?<redacted>",
            ),
            ("http://host?key=s3cret", "http://host?<redacted>"),
            ("http://host#frag", "http://host?<redacted>"),
            // Malformed: cut the same way.
            (
                "http://user:hunter2@[::1/x?key=s3cret",
                "http://<redacted>@[::1/x?<redacted>",
            ),
            ("user:hunter2@host:4318", "<redacted>@host:4318"),
            ("http://a@b@host/p", "http://<redacted>@host/p"),
            ("u:p@host/x?k=v://y", "<redacted>@host/x?<redacted>"),
            ("http://host/\u{1b}[31m", "http://host/\\u{1b}[31m"),
        ];
        for (url, shown) in cases {
            assert_eq!(redacted_url(url), shown, "{url}");
        }
    }

    #[test]
    fn shell_words_read_back_and_hold_no_raw_control_character() {
        let cases = [
            ("acme", "acme"),
            ("/tmp/host.json", "/tmp/host.json"),
            ("host config.json", "'host config.json'"),
            ("it's", r#""it's""#),
            ("", "''"),
            ("a$b", "'a$b'"),
            ("red\u{1b}[31m", r"$'red\x1b[31m'"),
            ("nul\0x", r"$'nul\x00x'"),
            ("rtl\u{202e}x", r"$'rtl\xe2\x80\xaex'"),
            ("q'\\\u{9b}", r"$'q\'\\\xc2\x9b'"),
        ];
        for (word, quoted) in cases {
            let shown = shell_word(word);
            assert_eq!(shown, quoted, "{word:?}");
            assert!(!shown.chars().any(is_hidden), "{shown:?}");
            // A shell reads it back as the word (bash, for `$'...'`; no NUL gets through
            // to a program).
            if !word.contains('\0') {
                let read = std::process::Command::new("bash")
                    .args(["-c", &format!("printf %s {shown}")])
                    .output()
                    .expect("bash runs");
                assert_eq!(String::from_utf8_lossy(&read.stdout), word, "{shown}");
            }
        }
    }

    #[test]
    fn what_drives_a_terminal_or_hides_text_is_escaped() {
        let cases = [
            ("plain é ü 日本", false, "plain é ü 日本"),
            ("red \x1b[31m", false, "red \\u{1b}[31m"),
            ("csi \u{9b}31m", false, "csi \\u{9b}31m"),
            ("bell\x07 del\x7f", false, "bell\\u{7} del\\u{7f}"),
            ("evil\u{202e}gnp.exe", false, "evil\\u{202e}gnp.exe"),
            ("x\u{2066}y\u{2069}", false, "x\\u{2066}y\\u{2069}"),
            (
                "zero\u{200b}width\u{feff}",
                false,
                "zero\\u{200b}width\\u{feff}",
            ),
            ("tag\u{e0041}", false, "tag\\u{e0041}"),
            ("sep\u{2028}x", false, "sep\\u{2028}x"),
            ("a\r\nb\tc", false, "a\\u{d}\\u{a}b\\u{9}c"),
            ("a\r\nb\tc\rd", true, "a\nb\tc\\u{d}d"),
            // Already escaped text is left as it is.
            ("\\u{1b}", false, "\\u{1b}"),
        ];
        for (text, multiline, shown) in cases {
            assert_eq!(escape(text, multiline), shown, "{text:?}");
        }
    }
}
