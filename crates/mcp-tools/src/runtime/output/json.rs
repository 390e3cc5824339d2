//! Every JSON text the CLI writes (events, bindings, reports on stdout; bindings it merges
//! into a config file) goes through here: serde_json's, with the characters of the one
//! escaping rule ([`is_hidden`]: C1 controls, DEL, bidirectional and zero-width
//! characters, ...) written as `\uXXXX` escapes (a surrogate pair above U+FFFF), so that
//! a terminal that shows the JSON, or a file, is not driven by what a server chose. The
//! escapes are JSON's own: the text parses back to the same value. (serde_json escapes
//! the C0 controls itself.)

use std::io;

use brain_tools_config::text::is_hidden;
use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter, PrettyFormatter};

/// `value` as one line of JSON.
pub(crate) fn to_string<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    write(value, CompactFormatter)
}

/// `value` as indented JSON, two spaces a level.
pub(crate) fn to_string_pretty<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    indented(value, b"  ")
}

/// `value` as JSON indented by `indent` a level.
pub(crate) fn indented<T: Serialize + ?Sized>(
    value: &T,
    indent: &[u8],
) -> serde_json::Result<String> {
    write(value, PrettyFormatter::with_indent(indent))
}

fn write<T: Serialize + ?Sized, F: Formatter>(
    value: &T,
    formatter: F,
) -> serde_json::Result<String> {
    let mut bytes = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, Escaping(formatter));
    value.serialize(&mut serializer)?;
    // Only whole strings are written, and escapes are ASCII.
    Ok(String::from_utf8(bytes)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned()))
}

/// A formatter as `F` is, but for the characters of strings (keys included), where what
/// [`is_hidden`] names is escaped.
struct Escaping<F>(F);

impl<F: Formatter> Formatter for Escaping<F> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut start = 0;
        for (at, c) in fragment.char_indices() {
            if !is_hidden(c) {
                continue;
            }
            self.0.write_string_fragment(writer, &fragment[start..at])?;
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                write!(writer, "\\u{unit:04x}")?;
            }
            start = at + c.len_utf8();
        }
        self.0.write_string_fragment(writer, &fragment[start..])
    }

    // Everything else is the inner formatter's.

    fn write_null<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.write_null(writer)
    }

    fn write_bool<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: bool) -> io::Result<()> {
        self.0.write_bool(writer, value)
    }

    fn write_i64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: i64) -> io::Result<()> {
        self.0.write_i64(writer, value)
    }

    fn write_i128<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: i128) -> io::Result<()> {
        self.0.write_i128(writer, value)
    }

    fn write_u64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: u64) -> io::Result<()> {
        self.0.write_u64(writer, value)
    }

    fn write_u128<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: u128) -> io::Result<()> {
        self.0.write_u128(writer, value)
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        self.0.write_f32(writer, value)
    }

    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        self.0.write_f64(writer, value)
    }

    fn write_number_str<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        value: &str,
    ) -> io::Result<()> {
        self.0.write_number_str(writer, value)
    }

    fn begin_string<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_string(writer)
    }

    fn end_string<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_string(writer)
    }

    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        char_escape: CharEscape,
    ) -> io::Result<()> {
        self.0.write_char_escape(writer, char_escape)
    }

    fn write_byte_array<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        value: &[u8],
    ) -> io::Result<()> {
        self.0.write_byte_array(writer, value)
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_array(writer)
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array(writer)
    }

    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(writer, first)
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array_value(writer)
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object(writer)
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object(writer)
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(writer, first)
    }

    fn end_object_key<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object_key(writer)
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object_value(writer)
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object_value(writer)
    }

    fn write_raw_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        self.0.write_raw_fragment(writer, fragment)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// Every character a terminal obeys or a reader is misled by, in keys and values.
    fn hostile() -> Value {
        let text = "x\u{1b}[31m\u{0}\u{7f}\u{85}\u{9b}2J\u{ad}\u{202e}\u{2066}\u{200b}\u{2028}\u{feff}\u{e0041}y é 日本 😀";
        json!({
            text: [text, {"nested": text}],
            "plain": "a\"b\\c\n\td",
            "n": 1.5,
            "m": -3,
            "t": true,
            "z": null,
        })
    }

    fn assert_no_hidden_char(shown: &str) {
        let raw: Vec<char> = shown
            .chars()
            .filter(|&c| is_hidden(c) && c != '\n' && c != '\t')
            .collect();
        assert!(raw.is_empty(), "{raw:?} raw in {shown:?}");
    }

    #[test]
    fn hidden_characters_are_escaped_and_the_value_is_the_same() {
        let value = hostile();
        for shown in [
            to_string(&value).unwrap(),
            to_string_pretty(&value).unwrap(),
            indented(&value, b"\t").unwrap(),
        ] {
            assert_no_hidden_char(&shown);
            let back: Value = serde_json::from_str(&shown).unwrap();
            assert_eq!(back, value, "{shown}");
        }
        let shown = to_string(&value).unwrap();
        for escape in [
            "\\u001b",
            "\\u0000",
            "\\u007f",
            "\\u0085",
            "\\u009b",
            "\\u00ad",
            "\\u202e",
            "\\u2066",
            "\\u200b",
            "\\u2028",
            "\\ufeff",
            "\\udb40\\udc41",
        ] {
            assert!(shown.contains(escape), "{escape} in {shown}");
        }
        // What needs no escape is written as serde_json writes it.
        assert!(shown.contains("y é 日本 😀"), "{shown}");
        assert!(shown.contains(r#""plain":"a\"b\\c\n\td""#), "{shown}");
    }

    #[test]
    fn plain_json_is_serde_jsons_own() {
        let value = json!({"a": [1, "two", {"b": null}], "c": "d"});
        assert_eq!(
            to_string(&value).unwrap(),
            serde_json::to_string(&value).unwrap()
        );
        assert_eq!(
            to_string_pretty(&value).unwrap(),
            serde_json::to_string_pretty(&value).unwrap()
        );
    }
}
