//! Who decides what runs: the user, never the skill.
//!
//! A skill's `tools.json` is written by the skill's author, so its allowlist says only what the
//! author wants to run. Three decisions belong to the user and are made here:
//! - [`ToolTrust`]: whose tools are offered at all (none by default);
//! - interpreters, shells and launchers ([`interpreter_in`]) run only when the user names
//!   them, because `sh -c`, `python3 -c`, `env` or `taskset -c 0 sh` turn any argument into a
//!   program; a program is judged by its name and by the real file it resolves to, so a link
//!   named `run` to `/bin/sh` is a shell too;
//! - the environment a tool sees ([`tool_env`]): a short list of harmless variables, never a
//!   key, token, secret, password or cloud credential.

use std::path::{Path, PathBuf};

use crate::skill::Skill;

/// The skills whose tools the user lets ctxkit offer and run. Empty by default: a skill
/// folder is content, and running its commands is the user's decision.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolTrust {
    /// Skills trusted by name.
    pub skills: Vec<String>,
    /// Folders: every skill whose `SKILL.md` lies below one (symlinks resolved) is trusted.
    pub roots: Vec<PathBuf>,
}

impl ToolTrust {
    /// Trust every skill under `root`.
    pub fn root(mut self, root: impl Into<PathBuf>) -> Self {
        self.roots.push(root.into());
        self
    }

    /// Trust the skill named `name` — whichever skill of that name wins in the loaded roots,
    /// including a project's own; pin trust to a folder with [`ToolTrust::root`] instead when
    /// projects are not trusted.
    pub fn skill(mut self, name: impl Into<String>) -> Self {
        self.skills.push(name.into());
        self
    }

    /// Whether `skill`'s tools may be offered and run. A root is judged on the real path of the
    /// folder the skill was found in — where its `tools.json` and `scripts/` come from — not on
    /// where its `SKILL.md` may link to.
    pub fn trusts(&self, skill: &Skill) -> bool {
        if self.skills.iter().any(|n| n.eq_ignore_ascii_case(&skill.name)) {
            return true;
        }
        if self.roots.is_empty() {
            return false;
        }
        let Some(Ok(real)) = skill.path.parent().map(std::fs::canonicalize) else {
            return false;
        };
        self.roots
            .iter()
            .filter_map(|root| std::fs::canonicalize(root).ok())
            .any(|root| real.starts_with(root))
    }
}

/// Programs that run code given in their arguments or run another program: shells,
/// language runtimes, launchers like `env`, `xargs` or `sudo`, and tools with an option or
/// command that runs one (`find -exec`, `git -c alias.x=!…`, `tar --to-command`, GNU `sed`'s
/// `e`, a pager's or editor's `!`, a package manager's scripts). A version suffix counts
/// (`python3.12`, `perl5.36`).
const INTERPRETERS: &[&str] = &[
    "sh",
    "bash",
    "dash",
    "zsh",
    "ksh",
    "mksh",
    "csh",
    "tcsh",
    "fish",
    "ash",
    "busybox",
    "pwsh",
    "powershell",
    "cmd",
    "python",
    "pypy",
    "perl",
    "ruby",
    "irb",
    "node",
    "nodejs",
    "deno",
    "bun",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "wish",
    "expect",
    "r",
    "rscript",
    "julia",
    "java",
    "jshell",
    "osascript",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "env",
    "xargs",
    "sudo",
    "doas",
    "su",
    "nohup",
    "timeout",
    "nice",
    "ionice",
    "setsid",
    "chroot",
    "strace",
    "ltrace",
    "gdb",
    "ssh",
    "script",
    "watch",
    "parallel",
    "make",
    "npx",
    "pnpx",
    "bunx",
    "uvx",
    "pipx",
    "docker",
    "podman",
    "find",
    "git",
    "tar",
    "rsync",
    "sed",
    "gsed",
    "vim",
    "vi",
    "nvim",
    "ex",
    "less",
    "more",
    "man",
    "npm",
    "pnpm",
    "yarn",
    "cargo",
    "go",
    "flock",
    "stdbuf",
    "time",
    "unshare",
    "nsenter",
    "runuser",
    "systemd-run",
    "tmux",
    "screen",
    "zip",
    "ssh-agent",
    "crontab",
    "at",
    "emacs",
    "ed",
    "scp",
    "sftp",
    "openssl",
    // Launchers: they run the program named in their arguments.
    "taskset",
    "chrt",
    "prlimit",
    "setpriv",
    "setarch",
    "linux32",
    "linux64",
    "capsh",
    "fakeroot",
    "fakechroot",
    "proot",
    "firejail",
    "bwrap",
    "systemd-nspawn",
    "schroot",
    "numactl",
    "cpulimit",
    "cgexec",
    "runcon",
    "trickle",
    "torsocks",
    "torify",
    "proxychains",
    "tsocks",
    "valgrind",
    "catchsegv",
    "faketime",
    "eatmydata",
    "nocache",
    "unbuffer",
    "rlwrap",
    "pkexec",
    "sg",
    "newgrp",
    "gosu",
    "su-exec",
    "chpst",
    "softlimit",
    "setuidgid",
    "envdir",
    "envuidgid",
    "daemonize",
    "start-stop-daemon",
    "dbus-launch",
    "dbus-run-session",
    "xvfb-run",
    "chronic",
    "ifne",
    "run-parts",
    "nq",
    "tsp",
    "batch",
    "hyperfine",
    "entr",
    "watchexec",
    "nodemon",
    "perf",
    "lldb",
    "rr",
    "ip",
    "toybox",
    "rbash",
    "m4",
    "wine",
    "mono",
    "dotnet",
    "erl",
    "escript",
    "elixir",
    "iex",
    "guile",
    "racket",
    "sbcl",
    "clisp",
    "ocaml",
    "runghc",
    "runhaskell",
    "ghci",
    "scala",
    "kotlin",
    "groovy",
    "swift",
    "dart",
    "xdg-open",
];

/// Name prefixes of programs that run another program: the dynamic loader
/// (`/lib64/ld-linux-x86-64.so.2 /bin/sh`, `ld.so`, `ld-musl-x86_64.so.1`) and user-mode
/// emulators (`qemu-x86_64`).
const INTERPRETER_PREFIXES: &[&str] = &["ld-linux", "ld-musl", "ld.so", "ld64.so", "qemu-"];

/// Whether `program` (a bare name) is a shell, an interpreter or a launcher.
pub(crate) fn is_interpreter(program: &str) -> bool {
    let lower = program.to_ascii_lowercase();
    let base = lower.trim_end_matches(".exe");
    let stem = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-' || c == '_');
    INTERPRETERS.contains(&base)
        || INTERPRETERS.contains(&stem)
        || INTERPRETER_PREFIXES.iter().any(|p| base.starts_with(p))
}

/// The shell, interpreter or launcher that running `program` would start, unless the user
/// allowed it by name (`allowed`): judged by the name as written, then by the name of the real
/// file it resolves to — through `PATH` for a bare name, from `dir` for a relative path, every
/// link followed — so `/usr/bin/sh` (really `dash`), a `scripts/run` linked to `/bin/sh` or a
/// renamed copy reached through a link are caught. A program that does not resolve is left to
/// fail when it is started.
pub(crate) fn interpreter_in(program: &str, dir: &Path, allowed: &[String]) -> Option<String> {
    let allows = |name: &str| allowed.iter().any(|a| a == name);
    let named = file_name(Path::new(program))?;
    if allows(&named) {
        return None;
    }
    if is_interpreter(&named) {
        return Some(named);
    }
    let real = real_program(program, dir)?;
    let real_name = file_name(&real)?;
    (is_interpreter(&real_name) && !allows(&real_name)).then_some(real_name)
}

/// The real path of the file `program` names: found through `PATH` when it is a bare name,
/// relative to `dir` otherwise.
pub(crate) fn real_program(program: &str, dir: &Path) -> Option<PathBuf> {
    let path = Path::new(program);
    let found = if path.components().count() > 1 || path.is_absolute() {
        dir.join(path)
    } else {
        which::which(program).ok()?
    };
    std::fs::canonicalize(found).ok()
}

fn file_name(path: &Path) -> Option<String> {
    path.file_name().map(|n| n.to_string_lossy().into_owned())
}

/// Variables every tool process gets, when set: enough to find programs, write temporary
/// files and speak the user's language.
const BASE_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TERM",
    "TMPDIR",
    "TEMP",
    "TMP",
    "SYSTEMROOT",
    "PATHEXT",
];

/// Name parts that mark a variable as a credential.
const SECRET_PARTS: &[&str] = &[
    "PASSPHRASE",
    "JWT",
    "KEY",
    "KEYS",
    "APIKEY",
    "TOKEN",
    "TOKENS",
    "SECRET",
    "SECRETS",
    "PASSWORD",
    "PASSWD",
    "PASS",
    "CREDENTIAL",
    "CREDENTIALS",
    "CREDS",
    "AUTH",
    "COOKIE",
    "SESSION",
    "PAT",
    "DSN",
];

/// Prefixes of cloud credentials and sessions.
const SECRET_PREFIXES: &[&str] = &[
    "AWS_",
    "AZURE_",
    "ARM_",
    "GOOGLE_",
    "GCP_",
    "GCLOUD_",
    "CLOUDSDK_",
];

/// Whether a variable name looks like it holds a credential; such a variable never reaches
/// a tool, even when the user lists it.
pub(crate) fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_PREFIXES.iter().any(|p| upper.starts_with(p))
        || upper.split(['_', '-']).any(|part| SECRET_PARTS.contains(&part))
        || upper.ends_with("KEY")
        || upper.ends_with("TOKEN")
        || upper.ends_with("SECRET")
        || upper.ends_with("PASSWORD")
        || upper.ends_with("_PWD")
}

/// The environment of a tool process: the base variables and those the user `extra`-listed,
/// when set and not secret-looking.
pub(crate) fn tool_env(extra: &[String]) -> Vec<(String, String)> {
    BASE_ENV
        .iter()
        .copied()
        .chain(extra.iter().map(String::as_str))
        .filter(|name| !is_secret_name(name))
        .filter_map(|name| std::env::var(name).ok().map(|v| (name.to_string(), v)))
        .collect()
}

/// A script's file must be a regular file whose real path stays in the skill's `scripts/`
/// folder: a link to `/bin/sh` would be an interpreter the user never allowed.
pub(crate) fn script_inside(scripts: &Path, file: &Path) -> bool {
    match (std::fs::canonicalize(scripts), std::fs::canonicalize(file)) {
        (Ok(dir), Ok(real)) => real.starts_with(dir) && real.is_file(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpreters_are_recognised_with_versions() {
        for name in [
            "sh",
            "bash",
            "python3",
            "python3.12",
            "Python.exe",
            "node",
            "env",
            "perl5.36",
            "xargs",
            "find",
            "git",
            "tar",
            "sed",
            "npm",
        ] {
            assert!(is_interpreter(name), "{name}");
        }
        for name in ["grep", "ls", "rg", "cat", "wc", "jq", "head"] {
            assert!(!is_interpreter(name), "{name}");
        }
    }

    #[test]
    fn launchers_are_interpreters_by_name_and_by_the_file_they_resolve_to() {
        for name in [
            "taskset",
            "chrt",
            "prlimit",
            "setpriv",
            "ld-linux-x86-64.so.2",
            "ld.so",
            "qemu-x86_64",
        ] {
            assert!(is_interpreter(name), "{name}");
        }
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            interpreter_in("taskset", dir.path(), &[]).as_deref(),
            Some("taskset")
        );
        assert_eq!(
            interpreter_in("python3", dir.path(), &["python3".into()]),
            None,
            "the user named it"
        );
        #[cfg(unix)]
        {
            let Some(sh) = real_program("sh", dir.path()) else {
                return; // no sh on this machine
            };
            std::fs::create_dir(dir.path().join("scripts")).unwrap();
            std::os::unix::fs::symlink(&sh, dir.path().join("scripts/run")).unwrap();
            let caught = interpreter_in("scripts/run", dir.path(), &[]);
            assert!(caught.as_deref().is_some_and(is_interpreter), "{caught:?}");
            std::os::unix::fs::symlink(&sh, dir.path().join("innocent")).unwrap();
            let absolute = dir.path().join("innocent");
            assert!(interpreter_in(absolute.to_str().unwrap(), Path::new("/"), &[]).is_some());
            assert_eq!(interpreter_in("grep", dir.path(), &[]), None);
        }
    }

    #[test]
    fn secret_names_never_pass() {
        for name in [
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "AWS_ACCESS_KEY_ID",
            "AWS_PROFILE",
            "DB_PASSWORD",
            "CLIENT_SECRET",
            "NPM_TOKEN",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "SENTRY_DSN",
            "ANTHROPIC_APIKEY",
            "mysecretkey",
            "MYSQL_PWD",
            "GPG_PASSPHRASE",
            "API_JWT",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["PATH", "HOME", "LANG", "GOPATH", "CARGO_HOME", "EDITOR", "PWD"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn the_tool_environment_is_an_allowlist() {
        let extra = vec!["PATH".to_string(), "OPENAI_API_KEY".to_string()];
        let names: Vec<String> = tool_env(&extra).into_iter().map(|(k, _)| k).collect();
        assert!(names.iter().all(|n| BASE_ENV.contains(&n.as_str())), "{names:?}");
    }
}
