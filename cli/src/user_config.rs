//! The user's own configuration: the one place that may grant trust.
//!
//! It lives in the user's config directory (`$CTXKIT_CONFIG`, else
//! `$XDG_CONFIG_HOME/ctxkit/config.toml`, else `~/.config/ctxkit/config.toml`), never in a
//! project: a cloned repository could otherwise trust its own tools.
//!
//! ```toml
//! [tools]
//! trust = ["~/my-skills/", "/opt/team-skills/"]  # absolute folders whose skills' tools may run
//! interpreters = ["python3"]                # shells and interpreters trusted tools may run
//! pass_env = ["GOPATH"]                     # extra variables tool processes see
//!
//! [mcp]
//! servers = ["npx -y @modelcontextprotocol/server-everything"]  # mounted by `ctxkit chat`
//! ```

use std::path::{Path, PathBuf};

use ctxkit_skills::{ExecOptions, ToolTrust};
use serde::Deserialize;

use crate::CliError;

/// What the user config file holds.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserConfig {
    #[serde(default)]
    tools: ToolsSection,
    #[serde(default)]
    mcp: McpSection,
}

/// MCP servers whose tools `ctxkit chat` mounts: command lines, split into words (no shell).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct McpSection {
    #[serde(default)]
    servers: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolsSection {
    #[serde(default)]
    trust: Vec<String>,
    #[serde(default)]
    interpreters: Vec<String>,
    #[serde(default)]
    pass_env: Vec<String>,
}

/// The most bytes read from the config file.
const MAX_CONFIG_BYTES: u64 = 256 * 1024;

impl UserConfig {
    /// The MCP servers the user configured for `ctxkit chat`.
    pub fn mcp_servers(&self) -> &[String] {
        &self.mcp.servers
    }

    /// The user's config, or the default when there is no file.
    pub fn load() -> Result<UserConfig, CliError> {
        match crate::places::user_config() {
            Some(path) if path.exists() => Self::read(&path),
            _ => Ok(UserConfig::default()),
        }
    }

    fn read(path: &Path) -> Result<UserConfig, CliError> {
        use std::io::Read;
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_CONFIG_BYTES).read_to_string(&mut text))
            .map_err(|e| CliError::new(format!("cannot read the config file `{}`: {e}", path.display())))?;
        let config: UserConfig = toml::from_str(&text).map_err(|e| {
            CliError::new(format!(
                "the config file `{}` is not valid: {}",
                path.display(),
                e.message()
            ))
        })?;
        config.check(path)?;
        Ok(config)
    }

    /// The config applies in every project, so it trusts folders only, and only absolute ones:
    /// a name or a relative folder would trust whatever a cloned repository puts there.
    fn check(&self, path: &Path) -> Result<(), CliError> {
        match self.tools.trust.iter().find(|e| !expand_home(e).is_absolute()) {
            Some(entry) => Err(CliError::new(format!(
                "the config file `{}` trusts `{entry}`, but the user config trusts only absolute folders \
                 (or ~/…): a name or a relative folder would trust what any project puts there; \
                 use --trust-tools for one command",
                path.display()
            ))),
            None => Ok(()),
        }
    }

    /// Tool options from this config plus the command line's `--trust-tools` and
    /// `--allow-interpreter`, with the workspace tools run in.
    pub fn exec_options(
        &self,
        trust: &[String],
        interpreters: &[String],
        workspace: Option<PathBuf>,
    ) -> ExecOptions {
        let mut tool_trust = ToolTrust::default();
        for entry in self.tools.trust.iter().chain(trust) {
            tool_trust = if is_folder(entry) {
                tool_trust.root(expand_home(entry))
            } else {
                tool_trust.skill(entry)
            };
        }
        ExecOptions {
            trust: tool_trust,
            allow_interpreters: self
                .tools
                .interpreters
                .iter()
                .chain(interpreters)
                .cloned()
                .collect(),
            pass_env: self.tools.pass_env.clone(),
            workspace_root: workspace,
            ..ExecOptions::default()
        }
    }
}

/// A trust entry names a folder when it is written like a path: with a slash, or `.`/`~`.
fn is_folder(entry: &str) -> bool {
    entry.contains('/') || entry.contains(std::path::MAIN_SEPARATOR) || entry.starts_with(['.', '~'])
}

fn expand_home(entry: &str) -> PathBuf {
    match (entry.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => PathBuf::from(entry),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_with_a_slash_are_folders_and_the_rest_names() {
        let config: UserConfig =
            toml::from_str("[tools]\ntrust = [\"/opt/skills\"]\ninterpreters = [\"python3\"]").unwrap();
        let options = config.exec_options(&["file-search".into(), "other/".into()], &["node".into()], None);
        assert_eq!(options.trust.skills, ["file-search"]);
        assert_eq!(
            options.trust.roots,
            [PathBuf::from("/opt/skills"), PathBuf::from("other/")]
        );
        assert_eq!(options.allow_interpreters, ["python3", "node"]);
        assert!(!options.allow_scripts);
    }

    #[test]
    fn the_user_config_trusts_absolute_folders_only() {
        for entry in ["file-search", "./skills", "skills/"] {
            let config: UserConfig = toml::from_str(&format!("[tools]\ntrust = [\"{entry}\"]")).unwrap();
            assert!(config.check(Path::new("c.toml")).is_err(), "{entry}");
        }
        let config: UserConfig = toml::from_str("[tools]\ntrust = [\"/opt/skills/\"]").unwrap();
        assert!(config.check(Path::new("c.toml")).is_ok());
    }

    #[test]
    fn unknown_keys_are_errors() {
        assert!(toml::from_str::<UserConfig>("[tools]\ntrusted = [\"x\"]").is_err());
    }
}
