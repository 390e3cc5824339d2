//! The stdio server of a discovery (`--command`): its command line split as a shell splits
//! it, its environment (`--env`, `--pass-env`) and its folder (`--cwd`, or the current one
//! when the command names relative paths), as the bindings will hold them.

use std::path::{Path, PathBuf};

use brain_tools_config::{EnvValue, StdioCommand};

use crate::runtime::exit::Exit;

/// The command of `--command`, with the environment (`--env` values, `--pass-env` names)
/// and the folder (`--cwd`) the flags give, and the notes that say what was made of
/// relative paths.
pub(crate) fn server(
    line: &str,
    values: &[(String, String)],
    passed: &[String],
    cwd: Option<&Path>,
) -> Result<(StdioCommand, Vec<String>), Exit> {
    let mut command = stdio_command(line)?;
    let here = std::env::current_dir()
        .map_err(|error| Exit::Failed(format!("cannot read the current folder: {error}")))?;
    let given = match cwd {
        Some(dir) => {
            let dir = here.join(dir);
            if !dir.is_dir() {
                return Err(Exit::Failed(format!(
                    "--cwd {} is not a folder",
                    dir.display()
                )));
            }
            Some(dir)
        }
        None => None,
    };
    let base = given.clone().unwrap_or_else(|| here.clone());
    let plan = folder(
        &command.program,
        &command.args,
        &base,
        given.is_some(),
        |path| path.exists(),
    );
    let mut notes = Vec::new();
    if let Some(program) = plan.program {
        notes.push(format!(
            "the program {} is a relative path: the bindings name it as {}",
            command.program,
            program.display()
        ));
        command.program = utf8(program, "the program's path")?;
    }
    if let Some(cwd) = plan.cwd {
        if given.is_none() {
            notes.push(format!(
                "the command names relative paths: the bindings start the server in {}, this folder (command.cwd){}",
                cwd.display(),
                if plan.relative.is_empty() {
                    String::new()
                } else {
                    format!(", where {} will be found", plan.relative.join(", "))
                }
            ));
        }
        command.cwd = Some(utf8(cwd, "--cwd")?);
    }
    command.env = environment(values, passed, |name| std::env::var_os(name).is_some())?;
    Ok((command, notes))
}

/// A stdio command line, split into words as a POSIX shell splits them (quotes and
/// backslashes; no expansions).
fn stdio_command(command: &str) -> Result<StdioCommand, Exit> {
    let words = shlex::split(command).ok_or_else(|| {
        Exit::Usage("--command has an unclosed quote or a trailing backslash".into())
    })?;
    let mut words = words.into_iter();
    let program = words
        .next()
        .ok_or_else(|| Exit::Usage("--command needs a program".into()))?;
    Ok(StdioCommand::new(program, words))
}

fn utf8(path: PathBuf, what: &str) -> Result<String, Exit> {
    path.into_os_string().into_string().map_err(|_| {
        Exit::Failed(format!(
            "{what} is not UTF-8, which a host config cannot hold"
        ))
    })
}

/// What relative paths in a command become.
#[derive(Debug, PartialEq)]
struct Folder {
    /// The program as an absolute path, when it was a relative one (`./server`): a child
    /// started in another folder would not find it otherwise.
    program: Option<PathBuf>,
    /// The server's folder, when one is to be recorded.
    cwd: Option<PathBuf>,
    /// The arguments that are relative paths.
    relative: Vec<String>,
}

/// Relative paths of a command, against `base`: a program with a `/` that is not absolute
/// is made absolute; arguments that are relative paths (`./x`, `../x`, or naming something
/// that exists in `base`) make `base` the recorded folder. `given`: the user named the
/// folder (it is recorded whatever the arguments are).
fn folder(
    program: &str,
    args: &[String],
    base: &Path,
    given: bool,
    exists: impl Fn(&Path) -> bool,
) -> Folder {
    let program_path = Path::new(program);
    let program = (program.contains('/') && program_path.is_relative()).then(|| {
        // `./bin/srv` is `base/bin/srv`, not `base/./bin/srv`.
        let parts = program_path
            .components()
            .filter(|part| *part != std::path::Component::CurDir);
        base.join(parts.collect::<PathBuf>())
    });
    let relative: Vec<String> = args
        .iter()
        .filter(|arg| {
            let path = Path::new(arg.as_str());
            !arg.starts_with('-')
                && path.is_relative()
                && (arg.starts_with("./") || arg.starts_with("../") || exists(&base.join(path)))
        })
        .cloned()
        .collect();
    let cwd = (given || program.is_some() || !relative.is_empty()).then(|| base.to_path_buf());
    Folder {
        program,
        cwd,
        relative,
    }
}

/// `--env` values as written and `--pass-env` names as references, in that order; a
/// variable named twice is a usage error, and a `--pass-env` variable must be set now
/// (discovery starts the server with it).
fn environment(
    values: &[(String, String)],
    passed: &[String],
    is_set: impl Fn(&str) -> bool,
) -> Result<Vec<(String, EnvValue)>, Exit> {
    let mut env: Vec<(String, EnvValue)> = Vec::new();
    let pairs = values
        .iter()
        .map(|(key, value)| (key.clone(), EnvValue::Value(value.clone())))
        .chain(
            passed
                .iter()
                .map(|name| (name.clone(), EnvValue::FromHost(name.clone()))),
        );
    for (key, value) in pairs {
        // Checked here, not by clap, whose message would quote the value: a secret
        // pasted where its name belongs.
        let is_name = key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if matches!(value, EnvValue::FromHost(_)) && !is_name {
            return Err(Exit::Usage(
                "--pass-env takes a variable's name (letters, digits and '_', not starting with a digit), not its value".into(),
            ));
        }
        if env.iter().any(|(taken, _)| *taken == key) {
            return Err(Exit::Usage(format!(
                "{key} is given twice (--env and --pass-env name each variable once)"
            )));
        }
        if let EnvValue::FromHost(name) = &value
            && !is_set(name)
        {
            return Err(Exit::Failed(format!(
                "{name} is not set: export it for the server, or leave out --pass-env {name}"
            )));
        }
        env.push((key, value));
    }
    Ok(env)
}

/// The variables the failure of a stdio server names (its stderr, in `failure`) that
/// this shell has and the server did not get: neither inherited
/// ([`StdioEndpoint::INHERITED_ENV`](brain_tools::StdioEndpoint::INHERITED_ENV)) nor in
/// its `env`. A secret exported here but not passed fails the server with its own words
/// only ("BRAVE_API_KEY environment variable is required"), which do not say that the
/// shell has it. `is_set`: whether this shell has a variable. Only names are read and
/// given, never values.
pub(crate) fn not_passed(
    failure: &str,
    command: &StdioCommand,
    is_set: impl Fn(&str) -> bool,
) -> Vec<String> {
    if command.inherit_env {
        return Vec::new();
    }
    let mut names: Vec<String> = Vec::new();
    for word in failure.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        // A variable's name as people write them: capitals, digits and `_`, two
        // characters or more, not starting with a digit.
        let is_name = word.len() >= 2
            && word.starts_with(|c: char| c.is_ascii_uppercase() || c == '_')
            && word
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            && word.chars().any(|c| c.is_ascii_uppercase());
        let given = brain_tools::StdioEndpoint::INHERITED_ENV.contains(&word)
            || command.env.iter().any(|(key, _)| key == word);
        if is_name && !given && !names.iter().any(|n| n == word) && is_set(word) {
            names.push(word.to_owned());
        }
    }
    names
}

/// What `check` says of a stdio binding whose command names relative paths and that has
/// no `cwd`: the host starts the server in its own folder, wherever that is, and the
/// paths are looked up there. `here`: the folder `check` runs in (a bare name such as
/// `server.py` counts as a path when it exists there, as in discovery); `exists`: whether
/// a path exists.
pub(crate) fn relative_without_cwd(
    command: &StdioCommand,
    here: &Path,
    exists: impl Fn(&Path) -> bool,
) -> Option<String> {
    if command.cwd.is_some() {
        return None;
    }
    let plan = folder(&command.program, &command.args, here, false, exists);
    let mut paths: Vec<&str> = Vec::new();
    if plan.program.is_some() {
        paths.push(&command.program);
    }
    paths.extend(plan.relative.iter().map(String::as_str));
    let (first, rest) = paths.split_first()?;
    let named = match rest {
        [] => format!("{first} is a relative path"),
        _ => format!("{first} and {} are relative paths", rest.join(", ")),
    };
    Some(format!(
        "{named} and the binding has no cwd: the host starts the server in its own working folder, wherever that is, and looks them up there; set command.cwd to the folder they are relative to (this one is {}), or make them absolute",
        here.display()
    ))
}

/// Where a stdio server's variables come from, for the advice that passes one.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Passing {
    /// Discovery's `-pass-env`.
    Flag,
    /// The binding's `command.env`.
    Binding,
}

/// `BRAVE_API_KEY is set in this shell, but the server was not given it ...: add ...`.
pub(crate) fn not_passed_hint(name: &str, how: Passing) -> String {
    let given = brain_tools::StdioEndpoint::INHERITED_ENV.join(", ");
    match how {
        Passing::Flag => format!(
            "{name} is set in this shell, but the server was not given it (a stdio server gets {given}, and what -env and -pass-env give it): add -pass-env {name}"
        ),
        Passing::Binding => format!(
            "{name} is set in this shell, but the server was not given it (a stdio server gets {given}, and its command.env): add \"{name}\": {{\"from_env\": \"{name}\"}} to the binding's command.env"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_is_split_as_a_shell_splits_words() {
        let cases: [(&str, &str, &[&str]); 5] = [
            ("npx -y server", "npx", &["-y", "server"]),
            ("  srv   a\tb ", "srv", &["a", "b"]),
            (
                r#""/opt/my server/run" --name "a b""#,
                "/opt/my server/run",
                &["--name", "a b"],
            ),
            ("srv 'it''s' \\$HOME", "srv", &["its", "$HOME"]),
            (r#"srv --token="x y""#, "srv", &["--token=x y"]),
        ];
        for (line, program, args) in cases {
            let command = stdio_command(line).unwrap();
            assert_eq!(command.program, program, "{line}");
            assert_eq!(command.args, args, "{line}");
        }
        for line in ["", "   ", "srv 'open", "srv \\"] {
            assert!(
                matches!(stdio_command(line), Err(Exit::Usage(_))),
                "{line:?} is a usage error"
            );
        }
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn relative_paths_are_resolved_or_the_folder_recorded() {
        let base = Path::new("/home/me/proj");
        let exists = |path: &Path| {
            [
                "/home/me/proj/server.py",
                "/home/me/proj/data",
                "/home/me/proj/stdio",
            ]
            .contains(&path.to_str().unwrap())
        };
        /// (program, args, --cwd given, program becomes, folder recorded, relative args)
        type Case<'a> = (
            &'a str,
            &'a [&'a str],
            bool,
            Option<&'a str>,
            bool,
            &'a [&'a str],
        );
        let cases: [Case<'_>; 7] = [
            ("python3", &["server.py"], false, None, true, &["server.py"]),
            (
                "./bin/srv",
                &[],
                false,
                Some("/home/me/proj/bin/srv"),
                true,
                &[],
            ),
            ("npx", &["-y", "@scope/server"], false, None, false, &[]),
            ("srv", &["--db-path", "data"], false, None, true, &["data"]),
            (
                "srv",
                &["../shared/x.db", "/abs/y"],
                false,
                None,
                true,
                &["../shared/x.db"],
            ),
            ("/usr/bin/srv", &["--stdio"], true, None, true, &[]),
            (
                "bin/srv",
                &["-v"],
                true,
                Some("/home/me/proj/bin/srv"),
                true,
                &[],
            ),
        ];
        for (program, args, given, becomes, recorded, relative) in cases {
            let plan = folder(program, &strings(args), base, given, exists);
            assert_eq!(
                plan,
                Folder {
                    program: becomes.map(PathBuf::from),
                    cwd: recorded.then(|| base.to_path_buf()),
                    relative: strings(relative),
                },
                "{program} {args:?}"
            );
        }
    }

    #[test]
    fn check_says_when_relative_paths_have_no_folder() {
        let here = Path::new("/home/me/proj");
        let exists = |path: &Path| path == Path::new("/home/me/proj/server.py");
        let said = |program: &str, args: &[&str], cwd: Option<&str>| {
            let mut command = StdioCommand::new(program, args.iter().copied());
            command.cwd = cwd.map(str::to_owned);
            relative_without_cwd(&command, here, exists)
        };
        insta::assert_snapshot!(said("./bin/server", &["--db", "../data/x.db"], None).unwrap());
        assert!(
            said("python3", &["server.py"], None)
                .unwrap()
                .starts_with("server.py is a relative path and the binding has no cwd")
        );
        // Found in PATH, absolute, or with a folder: nothing to say.
        assert_eq!(said("npx", &["-y", "@scope/server"], None), None);
        assert_eq!(said("/opt/srv", &["--stdio"], None), None);
        assert_eq!(said("./bin/server", &["x.db"], Some("/srv")), None);
    }

    /// A server that fails for want of a variable this shell has: the variable is named;
    /// not one the server got, nor one the shell lacks, nor a word that only looks like one.
    #[test]
    fn a_variable_the_shell_has_and_the_server_lacks_is_named() {
        let set = |name: &str| ["BRAVE_API_KEY", "HOME", "LOG_LEVEL"].contains(&name);
        let mut command = StdioCommand::new("mcp-server-brave-search", Vec::<String>::new());
        command.env = vec![("LOG_LEVEL".into(), EnvValue::Value("warn".into()))];
        let failure = "command mcp-server-brave-search ended before its handshake (exit status: 1; \
             stderr: Error: BRAVE_API_KEY environment variable is required; HOME, LOG_LEVEL and \
             OTHER_KEY were read; BRAVE_API_KEY again)";
        assert_eq!(not_passed(failure, &command, set), ["BRAVE_API_KEY"]);
        insta::assert_snapshot!(
            [Passing::Flag, Passing::Binding]
                .map(|how| not_passed_hint("BRAVE_API_KEY", how))
                .join("\n")
        );
        command.inherit_env = true;
        assert!(not_passed(failure, &command, set).is_empty());
        command.inherit_env = false;
        assert!(not_passed("exit status: 1", &command, set).is_empty());
    }

    #[test]
    fn variables_are_values_or_references_each_once() {
        let set = |name: &str| name == "NOTION_TOKEN";
        let env = environment(
            &[("LOG_LEVEL".into(), "warn".into())],
            &strings(&["NOTION_TOKEN"]),
            set,
        )
        .unwrap();
        assert_eq!(
            env,
            [
                ("LOG_LEVEL".to_owned(), EnvValue::Value("warn".into())),
                (
                    "NOTION_TOKEN".to_owned(),
                    EnvValue::FromHost("NOTION_TOKEN".into())
                ),
            ]
        );
        assert!(matches!(
            environment(
                &[("NOTION_TOKEN".into(), "x".into())],
                &strings(&["NOTION_TOKEN"]),
                set
            ),
            Err(Exit::Usage(message)) if message.starts_with("NOTION_TOKEN is given twice")
        ));
        assert!(matches!(
            environment(&[], &strings(&["API_KEY"]), set),
            Err(Exit::Failed(message)) if message == "API_KEY is not set: export it for the server, or leave out --pass-env API_KEY"
        ));
        assert!(matches!(
            environment(&[], &strings(&["sk-live-0123"]), set),
            Err(Exit::Usage(message)) if !message.contains("sk-live")
        ));
    }
}
