//! Every string a server (or a config, or a store) chose passes through [`escape`], the
//! one escaping rule (`brain_tools_config::text`, which the config's messages and the
//! providers' findings use too), before a command prints it in a format meant for people
//! (human results, messages, summaries, diffs, prompts); every URL through
//! [`redacted_url`], which leaves out its user info and query.

pub(crate) use brain_tools_config::text::{escape, redacted_url};

/// [`escape`] on one line of at most `max` characters (escapes included), `…` when cut.
pub(crate) fn line(text: &str, max: usize) -> String {
    let escaped = escape(text, false);
    if escaped.chars().count() <= max {
        return escaped;
    }
    let mut cut: String = escaped.chars().take(max).collect();
    cut.push('…');
    cut
}

/// Test text holding one of each kind of character [`escape`] must catch, and a check
/// that an output holds none of them raw.
#[cfg(test)]
pub(crate) mod hostile {
    /// ESC (a colour), C1 CSI, a bidi override and isolate, a zero-width space, a tag.
    pub(crate) const TEXT: &str = "x\u{1b}[31m\u{9b}2J\u{202e}\u{2066}\u{200b}\u{e0041}y";

    /// Panics when `shown` holds a character of [`TEXT`] raw.
    pub(crate) fn assert_escaped(shown: &str) {
        for c in [
            '\u{1b}',
            '\u{9b}',
            '\u{202e}',
            '\u{2066}',
            '\u{200b}',
            '\u{e0041}',
        ] {
            assert!(
                !shown.contains(c),
                "{c:?} reaches the terminal raw: {shown:?}"
            );
        }
        assert!(
            shown.contains("\\u{202e}"),
            "escaped, not dropped: {shown:?}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_bounded_after_escaping() {
        assert_eq!(line("short", 10), "short");
        assert_eq!(line("abcdef", 3), "abc…");
        assert_eq!(line("\u{202e}abc", 8), "\\u{202e}…");
    }
}
