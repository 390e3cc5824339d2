//! Every file under `tests/corpus/` is one case; its snapshot is what a user reads.
//! Files named `ok_*` must load, `warn_*` must load with warnings, `err_*` must fail.
//! A secret written into a case contains `hunter2`; no message may ever show it.

#[test]
fn corpus() {
    insta::glob!("../corpus", "*.json", |path| {
        let bytes = std::fs::read(path).expect("readable case");
        let rendered = crate::render(&bytes);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("ok_") {
            assert!(
                rendered.starts_with("loads\n{"),
                "{name} should load cleanly:\n{rendered}"
            );
        } else if name.starts_with("warn_") {
            assert!(
                rendered.starts_with("loads\nwarning: "),
                "{name} should warn:\n{rendered}"
            );
        } else {
            assert!(
                rendered.starts_with("the host config has "),
                "{name} should fail:\n{rendered}"
            );
        }
        assert!(
            !rendered.contains("hunter2"),
            "{name} shows a secret:\n{rendered}"
        );
        insta::assert_snapshot!(rendered);
    });
}
