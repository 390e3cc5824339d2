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
}
