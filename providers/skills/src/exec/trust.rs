//! Who decides what runs: the user, never the skill.
//!
//! A skill's `tools.json` is written by the skill's author, so its allowlist says only what the
//! author wants to run. Three decisions belong to the user and are made here:
//! - [`ToolTrust`]: whose tools are offered at all (none by default);
//! - shells, interpreters, launchers and programs with a shell escape ([`interpreter_in`]) run
//!   only when the user names them, because `sh -c`, `python3 -c`, `taskset -c 0 sh` or
//!   `sqlite3 db .shell` turn an argument into a program; a program is judged by its name and
//!   by the real file it resolves to, so a link named `run` to `/bin/sh` is a shell too, and
//!   the refusal says which it is and why;
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

/// Shells: every argument can be a command line.
const SHELLS: &[&str] = &[
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
    "rbash",
    "yash",
    "posh",
    "elvish",
    "nu",
    "busybox",
    "toybox",
    "pwsh",
    "powershell",
    "cmd",
];

/// Language runtimes: an argument can be a program.
const INTERPRETERS: &[&str] = &[
    "python",
    "pypy",
    "perl",
    "ruby",
    "irb",
    "pry",
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
    "octave",
    "java",
    "jshell",
    "jrunscript",
    "jjs",
    "osascript",
    "mongosh",
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
];

/// Launchers: they start the program named in their arguments (`taskset -c 0 sh -c …`).
const LAUNCHERS: &[&str] = &[
    "env",
    "xargs",
    "sudo",
    "doas",
    "su",
    "runuser",
    "pkexec",
    "sg",
    "newgrp",
    "gosu",
    "su-exec",
    "nohup",
    "timeout",
    "nice",
    "ionice",
    "setsid",
    "chroot",
    "strace",
    "ltrace",
    "script",
    "watch",
    "parallel",
    "npx",
    "pnpx",
    "bunx",
    "uvx",
    "pipx",
    "flock",
    "stdbuf",
    "time",
    "unshare",
    "nsenter",
    "systemd-run",
    "tmux",
    "screen",
    "ssh-agent",
    "sshpass",
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
    "logsave",
    "hyperfine",
    "entr",
    "watchexec",
    "nodemon",
    "perf",
    "rr",
    "ip",
    "wine",
    "mono",
    "dotnet",
    "xdg-open",
];

/// Name prefixes of launchers: the dynamic loader (`/lib64/ld-linux-x86-64.so.2 /bin/sh`,
/// `ld.so`, `ld-musl-x86_64.so.1`) and user-mode emulators (`qemu-x86_64`).
const LAUNCHER_PREFIXES: &[&str] = &["ld-linux", "ld-musl", "ld.so", "ld64.so", "qemu-"];

/// Programs with a way out built in: a command language, an option or a configuration value
/// that runs a shell or another program, or writes a file its path checks cannot see — each
/// with how, completing "`NAME`, which …". The reference is GTFOBins' "shell" class, kept to
/// programs a skill's tool may declare. Left out on purpose: options no tool needs for its job
/// and that are not on that list (`rg --pre`, `sort --compress-program`) — refusing ripgrep
/// would refuse the commonest search tool, and the model cannot add an option (a value
/// starting with `-` is refused).
const SHELL_ESCAPES: &[(&[&str], &str)] = &[
    (
        &["sqlite", "sqlite3", "duckdb"],
        "can run a shell (`.shell`, `.system`), load code (`.load`) and write any file (`.once`, `.output`, `ATTACH`) from the SQL it is given",
    ),
    (
        &["mysql", "mariadb"],
        "can run a shell (`\\!`, `system`) and write any file (`tee`) from the SQL it is given",
    ),
    (
        &["psql"],
        "can run a shell (`\\!`, `\\o |…`, `\\copy … program`) and write any file (`\\o`, `\\w`) from the SQL it is given",
    ),
    (
        &["awk", "gawk", "mawk", "nawk"],
        "runs a shell from its program text (`system()`, `| getline`, `print | …`) and writes any file (`print > …`)",
    ),
    (&["sed", "gsed"], "runs a shell (GNU `e`) and writes any file (`w`) from its script"),
    (&["m4"], "runs a shell from its input (`syscmd`, `esyscmd`)"),
    (&["dc"], "runs a shell from its input (`!`)"),
    (&["gnuplot"], "runs a shell from its script (`system`, `!`)"),
    (
        &["find"],
        "runs any program (`-exec`, `-execdir`, `-ok`) and writes any file (`-fprint`, `-fls`)",
    ),
    (
        &["git"],
        "runs any command through its configuration (`-c core.pager=…`, `-c alias.x=!…`, `core.sshCommand`, hooks)",
    ),
    (&["hg"], "runs any command through its configuration (`--config alias.x=!…`, hooks)"),
    (
        &["svn"],
        "runs any program as its diff tool or editor (`--diff-cmd`, `--editor-cmd`, `--config-option`)",
    ),
    (
        &["tar", "gtar", "bsdtar"],
        "runs any program (`--to-command`, `--checkpoint-action=exec=…`, `-I`) and writes files wherever an archive says",
    ),
    (&["zip"], "runs any program to test the archive (`-T -TT …`)"),
    (
        &["rsync"],
        "runs any program as its remote shell (`-e`, `--rsh`, `--rsync-path`) and writes files anywhere",
    ),
    (
        &["ssh"],
        "runs any program here (`-o ProxyCommand=…`, `-o LocalCommand=…`) and any command on a host",
    ),
    (&["scp", "sftp"], "runs any program as its transport (`-S`, `-o ProxyCommand=…`)"),
    (&["ftp", "lftp", "smbclient"], "runs a shell (`!`) and writes any local file"),
    (
        &["socat"],
        "runs any program (`EXEC:`, `SYSTEM:`) and writes any file (`OPEN:`, `CREATE:`) from its addresses",
    ),
    (&["nc", "ncat", "netcat"], "runs any program for a connection (`-e`, `-c`)"),
    (
        &["vi", "vim", "nvim", "view", "vimdiff", "rvim", "rview", "ex", "ed", "emacs", "nano"],
        "is an editor, which runs a shell (`:!`, `!`, `M-!`) and writes any file",
    ),
    (
        &["less", "more", "most", "pg"],
        "is a pager, which runs a shell (`!`) and an editor (`v`)",
    ),
    (&["man"], "runs any program as its pager (`-P`, `--pager`), and a pager runs a shell (`!`)"),
    (&["make", "gmake", "bmake"], "runs any command of its rules (`--eval`, a makefile, `SHELL=`)"),
    (
        &["npm", "pnpm", "yarn", "cargo", "go", "pip", "gem", "bundle", "composer", "poetry", "uv", "mvn", "gradle", "rake"],
        "runs the scripts of the packages it installs and of the project it builds (`npm run`, `build.rs`, `setup.py`, …)",
    ),
    (
        &["gcc", "cc", "clang", "g++", "c++", "clang++"],
        "runs any program as a pass of its build (`-wrapper`, `-B`) and writes any file (`-o`)",
    ),
    (&["gdb", "lldb"], "is a debugger, which runs any program and a shell (`shell …`)"),
    (&["docker", "podman"], "runs any container, with any host folder mounted (`-v /:/host`)"),
    (&["dd"], "writes any file its operands name (`of=…`), which path checks cannot see"),
    (&["openssl"], "loads any code (`-engine`, `-provider`) and writes any file (`-out`)"),
    (&["crontab", "at", "batch"], "installs commands that run later, outside any timeout"),
    (&["split"], "runs a shell for each piece (`--filter`)"),
    (&["tcpdump"], "runs any program on each file it saves (`-z`)"),
    (&["nmap"], "runs scripts that run any program (`--script`)"),
    (&["aria2c"], "runs any program when a download ends (`--on-download-complete`)"),
];

/// Why `program` (a bare name) runs only when the user names it, completing "`NAME`, which …";
/// `None` for a program that runs nothing else. A version suffix counts (`python3.12`,
/// `perl5.36`, `sqlite3`), and so does `.exe`.
pub(crate) fn why_interpreter(program: &str) -> Option<&'static str> {
    let lower = program.to_ascii_lowercase();
    let base = lower.trim_end_matches(".exe");
    let stem = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-' || c == '_');
    let named = |names: &[&str]| names.contains(&base) || names.contains(&stem);
    if named(SHELLS) {
        Some("is a shell: every argument can be a command line")
    } else if named(INTERPRETERS) {
        Some("is an interpreter: an argument can be a program")
    } else if named(LAUNCHERS) || LAUNCHER_PREFIXES.iter().any(|p| base.starts_with(p)) {
        Some("is a launcher: it starts the program named in its arguments")
    } else {
        SHELL_ESCAPES
            .iter()
            .find(|(names, _)| named(names))
            .map(|(_, why)| *why)
    }
}

/// A program that runs only when the user names it: a shell, an interpreter, a launcher, or a
/// program with a shell escape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Interpreter {
    /// Its name, as written or as the real file it resolves to.
    pub(crate) name: String,
    /// What makes it one, completing "`NAME`, which …".
    pub(crate) why: &'static str,
}

impl std::fmt::Display for Interpreter {
    /// "`sqlite3`, which can run a shell (`.shell`, `.system`) …".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`, which {}", self.name, self.why)
    }
}

/// The interpreter (in the broad sense of [`why_interpreter`]) that running `program` would
/// start, unless the user allowed it by name (`allowed`): judged by the name as written, then
/// by the name of the real file it resolves to — through `PATH` for a bare name, from `dir`
/// for a relative path, every link followed — so `/usr/bin/sh` (really `dash`), a
/// `scripts/run` linked to `/bin/sh` or a renamed copy of `sqlite3` reached through a link
/// are caught. A program that does not resolve is left to fail when it is started.
pub(crate) fn interpreter_in(program: &str, dir: &Path, allowed: &[String]) -> Option<Interpreter> {
    let allows = |name: &str| allowed.iter().any(|a| a == name);
    let found = |name: String| why_interpreter(&name).map(|why| Interpreter { name, why });
    let named = file_name(Path::new(program))?;
    if allows(&named) {
        return None;
    }
    if let Some(found) = found(named) {
        return Some(found);
    }
    let real_name = file_name(&real_program(program, dir)?)?;
    if allows(&real_name) {
        return None;
    }
    found(real_name)
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

    fn is_interpreter(name: &str) -> bool {
        why_interpreter(name).is_some()
    }

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
        for name in ["grep", "ls", "rg", "cat", "wc", "jq", "head", "sort", "curl"] {
            assert!(!is_interpreter(name), "{name}");
        }
    }

    /// Every class, by a member: a refusal says what kind of program it is and how it escapes.
    #[test]
    fn each_kind_says_why() {
        let why = |name: &str| why_interpreter(name).unwrap_or_else(|| panic!("{name}"));
        assert!(why("zsh").contains("shell"));
        assert!(why("ruby3.3").contains("interpreter"));
        assert!(why("ld-linux-x86-64.so.2").contains("launcher"));
        assert!(why("sqlite3").contains("`.shell`"), "{}", why("sqlite3"));
        assert!(why("duckdb").contains("`.system`"));
        assert!(why("gawk").contains("`system()`"));
        assert!(why("git").contains("core.pager"));
        assert!(why("tar").contains("--to-command"));
        assert!(why("zip").contains("-TT"));
        assert!(why("find").contains("-exec"));
        assert!(why("psql").contains("\\!"));
        assert!(why("nvim").contains("editor"));
        assert!(why("less").contains("pager"));
        assert!(why("dd").contains("of="));
        let shown = Interpreter {
            name: "sqlite3".into(),
            why: why("sqlite3"),
        }
        .to_string();
        assert!(shown.starts_with("`sqlite3`, which can run a shell"), "{shown}");
    }

    /// No name is listed twice (in two classes, it would get the first one's reason).
    #[test]
    fn the_lists_do_not_overlap() {
        let mut all: Vec<&str> = SHELLS
            .iter()
            .chain(INTERPRETERS)
            .chain(LAUNCHERS)
            .chain(SHELL_ESCAPES.iter().flat_map(|(names, _)| names.iter()))
            .copied()
            .collect();
        let count = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), count);
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
            interpreter_in("taskset", dir.path(), &[])
                .map(|found| found.name)
                .as_deref(),
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
            assert!(caught.is_some_and(|found| is_interpreter(&found.name)));
            std::os::unix::fs::symlink(&sh, dir.path().join("innocent")).unwrap();
            let absolute = dir.path().join("innocent");
            assert!(interpreter_in(absolute.to_str().unwrap(), Path::new("/"), &[]).is_some());
            assert_eq!(interpreter_in("grep", dir.path(), &[]), None);
        }
    }

    /// A program with a shell escape is caught by the name of the file it resolves to, like a
    /// shell: `scripts/query` linked to `sqlite3` is `sqlite3`.
    #[cfg(unix)]
    #[test]
    fn a_shell_escape_is_caught_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("bin/sqlite3");
        std::fs::create_dir_all(fake.parent().unwrap()).unwrap();
        std::fs::write(&fake, "").unwrap();
        std::os::unix::fs::symlink(&fake, dir.path().join("query")).unwrap();
        let found = interpreter_in("./query", dir.path(), &[]).unwrap();
        assert_eq!(found.name, "sqlite3");
        assert!(found.why.contains("`.shell`"));
        assert_eq!(interpreter_in("./query", dir.path(), &["sqlite3".into()]), None);
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
