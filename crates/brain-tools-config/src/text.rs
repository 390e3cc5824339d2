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
