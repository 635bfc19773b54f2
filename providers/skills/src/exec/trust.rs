//! Who decides what runs: the user, never the skill.
//!
//! A skill's `tools.json` is written by the skill's author, so its allowlist says only what the
//! author wants to run. Three decisions belong to the user and are made here:
//! - [`ToolTrust`]: whose tools are offered at all (none by default);
//! - interpreters and shells ([`is_interpreter`]) run only when the user names them, because
//!   `sh -c`, `python3 -c` or `env` turn any argument into a program;
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
];

/// Whether `program` (a bare name) is a shell, an interpreter or a launcher.
pub(crate) fn is_interpreter(program: &str) -> bool {
    let lower = program.to_ascii_lowercase();
    let base = lower.trim_end_matches(".exe");
    let stem = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    INTERPRETERS.contains(&base) || INTERPRETERS.contains(&stem)
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
