//! JSON paths for problem reports: `tools[3].input_schema.properties["a b"]`.

use std::fmt;

/// A JSON path, built while walking a document.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Path {
    segments: Vec<Segment>,
}

#[derive(Debug, Clone, PartialEq)]
enum Segment {
    Key(String),
    Index(usize),
}

impl Path {
    pub(crate) fn root() -> Self {
        Self::default()
    }

    pub(crate) fn key(&self, key: &str) -> Self {
        let mut path = self.clone();
        path.segments.push(Segment::Key(key.to_owned()));
        path
    }

    pub(crate) fn index(&self, index: usize) -> Self {
        let mut path = self.clone();
        path.segments.push(Segment::Index(index));
        path
    }

    /// Descends into `key` in place (the parser keeps one path as a stack).
    pub(crate) fn push_key(&mut self, key: String) {
        self.segments.push(Segment::Key(key));
    }

    /// Descends into item `index` in place.
    pub(crate) fn push_index(&mut self, index: usize) {
        self.segments.push(Segment::Index(index));
    }

    /// Climbs back one level; the key given back when that level was a key.
    pub(crate) fn pop(&mut self) -> Option<String> {
        match self.segments.pop()? {
            Segment::Key(key) => Some(key),
            Segment::Index(_) => None,
        }
    }

    /// Whether this is the document itself.
    pub(crate) fn is_root(&self) -> bool {
        self.segments.is_empty()
    }

    /// Whether this is `tools` or something inside it.
    pub(crate) fn is_in_tools(&self) -> bool {
        matches!(self.segments.first(), Some(Segment::Key(key)) if key == "tools")
    }

    /// `Some(i)` for `tools[i]` and everything inside it.
    pub(crate) fn binding_index(&self) -> Option<usize> {
        match self.segments.as_slice() {
            [Segment::Key(key), Segment::Index(index), ..] if key == "tools" => Some(*index),
            _ => None,
        }
    }
}

fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '-')
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.segments.iter().enumerate() {
            match segment {
                Segment::Key(key) if is_plain_key(key) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(key)?;
                }
                Segment::Key(key) => {
                    let quoted = serde_json::to_string(key).map_err(|_| fmt::Error)?;
                    write!(f, "[{quoted}]")?;
                }
                Segment::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_keys_indexes_and_quoted_keys() {
        let path = Path::root()
            .key("tools")
            .index(3)
            .key("input_schema")
            .key("properties")
            .key("a b");
        assert_eq!(
            path.to_string(),
            r#"tools[3].input_schema.properties["a b"]"#
        );
        assert_eq!(Path::root().to_string(), "");
        assert_eq!(Path::root().key("$defs").to_string(), "$defs");
    }

    #[test]
    fn works_as_a_stack_and_knows_its_binding() {
        let mut path = Path::root();
        assert!(path.is_root() && !path.is_in_tools());
        path.push_key("tools".into());
        assert!(path.is_in_tools());
        assert_eq!(path.binding_index(), None);
        path.push_index(2);
        path.push_key("command".into());
        assert_eq!(path.binding_index(), Some(2));
        assert_eq!(path.to_string(), "tools[2].command");
        assert_eq!(path.pop().as_deref(), Some("command"));
        assert_eq!(path.pop(), None);
        assert_eq!(path.to_string(), "tools");
        let other = Path::root().key("logging").index(0);
        assert!(!other.is_in_tools());
        assert_eq!(other.binding_index(), None);
    }
}
