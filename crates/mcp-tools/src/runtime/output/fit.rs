//! Reports fitted to the width a person reads them at: the terminal's, or
//! [`DEFAULT_COLUMNS`] when the report goes to a file or a pipe.

use std::os::fd::AsFd;

/// The width of a report that does not go to a terminal.
pub(crate) const DEFAULT_COLUMNS: usize = 100;

/// Narrower terminals get this width all the same: a line cut into a few characters at a
/// time reads worse than one the terminal wraps.
const MIN_COLUMNS: usize = 40;

/// How much further than its own line a line's continuations are indented.
const HANG: usize = 4;

/// The width of the terminal `stream` is, else [`DEFAULT_COLUMNS`].
pub(crate) fn columns(stream: impl AsFd) -> usize {
    terminal_size::terminal_size_of(stream)
        .map_or(DEFAULT_COLUMNS, |(width, _)| usize::from(width.0))
        .max(MIN_COLUMNS)
}

/// `text` with every line longer than `width` characters broken at spaces, each
/// continuation indented [`HANG`] columns past its line's own indent. A word longer than
/// the room left (a URL) gets a line of its own and is never cut.
pub(crate) fn fit(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (line, newline) = match line.strip_suffix('\n') {
            Some(line) => (line, "\n"),
            None => (line, ""),
        };
        fit_line(line, width, &mut out);
        out.push_str(newline);
    }
    out
}

fn fit_line(line: &str, width: usize, out: &mut String) {
    let length = |text: &str| text.chars().count();
    if length(line) <= width {
        out.push_str(line);
        return;
    }
    let body = line.trim_start_matches(' ');
    let indent = line.len() - body.len();
    let hang = " ".repeat((indent + HANG).min(width / 2));
    let mut current = " ".repeat(indent);
    // Whether `current` holds a word yet (an indent alone does not count).
    let mut started = false;
    for word in body.split(' ') {
        if started && length(&current) + 1 + length(word) > width {
            out.push_str(current.trim_end());
            out.push('\n');
            current.clone_from(&hang);
            started = false;
        }
        if started {
            current.push(' ');
        }
        current.push_str(word);
        started = true;
    }
    out.push_str(current.trim_end());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_break_at_spaces_with_a_hanging_indent() {
        let cases: [(&str, usize, &str); 5] = [
            ("short line\n", 20, "short line\n"),
            (
                "  one two three four five six\n",
                15,
                "  one two three\n      four five\n      six\n",
            ),
            // A word longer than the width stands alone, whole.
            (
                "see https://example.com/a/very/long/path now",
                12,
                "see\n    https://example.com/a/very/long/path\n    now",
            ),
            // Lines are fitted one by one; short ones are untouched. The hang is at most
            // half the width.
            ("a b c d e f\nshort\n", 5, "a b c\n  d e\n  f\nshort\n"),
            // Width counts characters, not bytes.
            ("— — — —", 5, "— — —\n  —"),
        ];
        for (text, width, expected) in cases {
            assert_eq!(fit(text, width), expected, "{text:?} at {width}");
        }
    }

    #[test]
    fn no_line_is_wider_than_the_width_unless_it_is_one_word() {
        let text = "  openai, strict mode, SDK fixes it [openai.strict-all-required] at input_schema.properties.limit: OpenAI strict mode rejects this schema: the property at input_schema.properties.limit is not listed in its object's `required` array (strict mode needs every property required)\n";
        for width in [40, 60, 100] {
            let fitted = fit(text, width);
            for line in fitted.lines() {
                assert!(
                    line.chars().count() <= width || !line.trim().contains(' '),
                    "{line:?} at {width}"
                );
            }
            assert_eq!(
                fitted.split_whitespace().collect::<Vec<_>>(),
                text.split_whitespace().collect::<Vec<_>>(),
                "no word lost or cut"
            );
        }
    }
}
