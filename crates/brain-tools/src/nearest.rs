//! The tool names nearest to a name that matched none, for the message of an unknown
//! tool: a model that misspelled a name, or guessed one from a description, learns the
//! names it may call instead. Only names the caller's tenant may use are ever offered, so
//! the answer to a tool the tenant may not use is still the answer to a tool that does
//! not exist. Pure, tested as a table.

/// At most this many names are offered.
pub(crate) const MAX_OFFERED: usize = 3;
/// A name longer than this is not compared (no configured name is: they are 64 at most).
const MAX_COMPARED: usize = 128;

/// The names among `names` nearest to `wanted`, nearest first (then by name), at most
/// [`MAX_OFFERED`]: those a few edits away (a typo, two letters swapped, a letter more or
/// less; one edit per three letters, at least one and at most three), the same words in
/// another order (`docs_search` for `search_docs`, as one edit), and those that hold
/// `wanted` or that it holds (`docs_search` for `search`; three letters at least), case,
/// `-` and `_` aside.
pub(crate) fn nearest<'a>(wanted: &str, names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    if wanted.chars().count() > MAX_COMPARED {
        return Vec::new();
    }
    let wanted = normal(wanted);
    let allowed = (wanted.len() / 3).clamp(1, 3);
    let mut near: Vec<(usize, &str)> = names
        .into_iter()
        .filter_map(|name| {
            let normal_name = normal(name);
            let distance = if same_words(&wanted, &normal_name) {
                1
            } else {
                distance(&wanted, &normal_name)
            };
            let holds = wanted.len() >= 3
                && normal_name.len() >= 3
                && (contains(&normal_name, &wanted) || contains(&wanted, &normal_name));
            (distance <= allowed || holds).then_some((distance, name))
        })
        .collect();
    near.sort_unstable();
    near.dedup_by(|a, b| a.1 == b.1);
    near.into_iter()
        .take(MAX_OFFERED)
        .map(|(_, name)| name)
        .collect()
}

/// A name as compared: lower case, `-` as `_`.
fn normal(name: &str) -> Vec<char> {
    name.chars()
        .flat_map(char::to_lowercase)
        .map(|c| if c == '-' { '_' } else { c })
        .collect()
}

/// Whether two names of more than one word hold the same words in another order.
fn same_words(a: &[char], b: &[char]) -> bool {
    let (a, b) = (words(a), words(b));
    a.len() > 1 && a == b
}

/// The words of a name, sorted.
fn words(name: &[char]) -> Vec<&[char]> {
    let mut words: Vec<&[char]> = name
        .split(|c| *c == '_')
        .filter(|word| !word.is_empty())
        .collect();
    words.sort_unstable();
    words
}

fn contains(haystack: &[char], needle: &[char]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// The edits (a letter added, dropped, changed, or two neighbours swapped) from `a` to
/// `b`: the optimal string alignment distance.
fn distance(a: &[char], b: &[char]) -> usize {
    let width = b.len() + 1;
    let mut rows = vec![0usize; (a.len() + 1) * width];
    let at = |i: usize, j: usize| i * width + j;
    for i in 0..=a.len() {
        rows[at(i, 0)] = i;
    }
    for j in 0..=b.len() {
        rows[at(0, j)] = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[at(i - 1, j)] + 1)
                .min(rows[at(i, j - 1)] + 1)
                .min(rows[at(i - 1, j - 1)] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[at(i - 2, j - 2)] + 1);
            }
            rows[at(i, j)] = best;
        }
    }
    rows[at(a.len(), b.len())]
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: &[&str] = &[
        "search",
        "research",
        "docs_search",
        "fetch",
        "read_file",
        "read_multiple_files",
        "write_file",
        "list_directory",
        "get-weather",
    ];

    #[test]
    fn the_names_a_model_meant() {
        // (what the model called, what it is offered)
        let cases: &[(&str, &[&str])] = &[
            ("serch", &["search"]),
            ("searhc", &["search"]),
            ("Search", &["search", "research", "docs_search"]),
            ("search_docs", &["docs_search", "search"]),
            ("docs-search", &["docs_search", "search"]),
            ("fetch_url", &["fetch"]),
            ("readfile", &["read_file"]),
            ("read_files", &["read_file"]),
            ("get_weather", &["get-weather"]),
            ("weather", &["get-weather"]),
            ("list_dir", &["list_directory"]),
            // Nothing near: nothing offered, rather than a guess.
            ("zzz", &[]),
            ("deploy", &[]),
            ("a", &[]),
            ("", &[]),
        ];
        for (wanted, offered) in cases {
            assert_eq!(nearest(wanted, TOOLS.iter().copied()), *offered, "{wanted}");
        }
    }

    #[test]
    fn at_most_three_and_never_a_huge_comparison() {
        let many: Vec<String> = (0..50).map(|i| format!("tool_{i}")).collect();
        let offered = nearest("tool_", many.iter().map(String::as_str));
        assert_eq!(offered.len(), MAX_OFFERED);
        let huge = "x".repeat(MAX_COMPARED + 1);
        assert!(nearest(&huge, TOOLS.iter().copied()).is_empty());
    }

    #[test]
    fn edits_are_counted_as_a_person_counts_them() {
        let d = |a: &str, b: &str| distance(&normal(a), &normal(b));
        assert_eq!(d("search", "search"), 0);
        assert_eq!(d("serch", "search"), 1);
        assert_eq!(d("searhc", "search"), 1);
        assert_eq!(d("fetch", "fetch_url"), 4);
        assert_eq!(d("", "abc"), 3);
    }
}
