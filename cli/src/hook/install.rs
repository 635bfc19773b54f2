//! `ctxkit hook install|uninstall claude-code`: ctxkit's entries in Claude Code's
//! `settings.json` (<https://code.claude.com/docs/en/settings>, hooks format in
//! <https://code.claude.com/docs/en/hooks>):
//!
//! ```json
//! {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "/abs/ctxkit hook claude-code", "timeout": 10}]}]}}
//! ```
//!
//! Every other setting and hook is kept (keys are written sorted). A previous ctxkit entry
//! (a command ending in ` hook claude-code`, whatever binary path) is replaced, never
//! duplicated, so installing twice gives the same file. The file is written atomically (a
//! temporary file in the same folder, renamed over it); a file that is not a JSON object is
//! refused with one sentence and left untouched.

use std::io::Write;
use std::path::Path;

use serde_json::{json, Map, Value};

use crate::CliError;

/// The events ctxkit answers, in the order they are written.
const EVENTS: [&str; 2] = ["SessionStart", "UserPromptSubmit"];
/// What ends ctxkit's command, after the binary's path: how an entry is recognised.
const SUBCOMMAND: &str = " hook claude-code";
/// Seconds Claude Code waits for the hook (its default is 60): a slow hook must not hold the
/// prompt for long.
const TIMEOUT_SECS: u64 = 10;
/// A settings file larger than this is not ours to rewrite.
const MAX_SETTINGS_BYTES: u64 = 4 << 20;

/// Add or replace ctxkit's entries in `path`.
pub fn install(path: &Path) -> Result<(), CliError> {
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|e| CliError::new(format!("cannot find the path of the running ctxkit: {e}")))?;
    let command = format!("{}{SUBCOMMAND}", quote(&exe.to_string_lossy()));
    let mut settings = read(path)?;
    let hooks = hooks_object(&mut settings, path)?;
    for event in EVENTS {
        let groups = hooks.entry(event).or_insert_with(|| json!([]));
        let Some(groups) = groups.as_array_mut() else {
            return Err(not_a_list(path, event));
        };
        remove_ours(groups);
        groups.push(json!({
            "hooks": [{"type": "command", "command": command, "timeout": TIMEOUT_SECS}]
        }));
    }
    write(path, &settings)?;
    println!(
        "Installed ctxkit's Claude Code hooks ({}) in {}",
        EVENTS.join(", "),
        path.display()
    );
    Ok(())
}

/// Remove ctxkit's entries from `path`; other hooks and settings stay.
pub fn uninstall(path: &Path) -> Result<(), CliError> {
    if !path.exists() {
        println!("No {}: nothing to remove", path.display());
        return Ok(());
    }
    let mut settings = read(path)?;
    let hooks = hooks_object(&mut settings, path)?;
    let mut removed = 0;
    for event in EVENTS {
        let Some(groups) = hooks.get_mut(event) else {
            continue;
        };
        let Some(list) = groups.as_array_mut() else {
            return Err(not_a_list(path, event));
        };
        removed += remove_ours(list);
        if list.is_empty() {
            hooks.remove(event);
        }
    }
    if hooks.is_empty() {
        if let Some(map) = settings.as_object_mut() {
            map.remove("hooks");
        }
    }
    if removed > 0 {
        write(path, &settings)?;
    }
    println!(
        "Removed {removed} ctxkit hook entr{} from {}",
        if removed == 1 { "y" } else { "ies" },
        path.display()
    );
    Ok(())
}

/// The settings in `path` (an empty object when there is no file), which must be a JSON object.
fn read(path: &Path) -> Result<Value, CliError> {
    let bytes = match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(json!({})),
        Err(e) => return Err(CliError::new(format!("cannot read `{}`: {e}", path.display()))),
        Ok(meta) if !meta.is_file() => {
            return Err(CliError::new(format!(
                "`{}` is not a regular file; nothing was written",
                path.display()
            )))
        }
        Ok(meta) if meta.len() > MAX_SETTINGS_BYTES => {
            return Err(CliError::new(format!(
                "`{}` is larger than {} MiB; nothing was written",
                path.display(),
                MAX_SETTINGS_BYTES >> 20
            )))
        }
        Ok(_) => std::fs::read(path)
            .map_err(|e| CliError::new(format!("cannot read `{}`: {e}", path.display())))?,
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err(CliError::new(format!(
            "`{}` is not a JSON object; nothing was written",
            path.display()
        ))),
        Err(e) => Err(CliError::new(format!(
            "`{}` is not valid JSON ({e}); fix it first, nothing was written",
            path.display()
        ))),
    }
}

/// The `hooks` object of the settings, created when missing.
fn hooks_object<'a>(settings: &'a mut Value, path: &Path) -> Result<&'a mut Map<String, Value>, CliError> {
    let map = settings.as_object_mut().expect("read() returns objects");
    map.entry("hooks")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| {
            CliError::new(format!(
                "`hooks` in `{}` is not a JSON object; nothing was written",
                path.display()
            ))
        })
}

fn not_a_list(path: &Path, event: &str) -> CliError {
    CliError::new(format!(
        "`hooks.{event}` in `{}` is not a list; nothing was written",
        path.display()
    ))
}

/// Remove ctxkit's commands from the matcher groups of one event, and groups left empty by
/// that; the number of commands removed.
fn remove_ours(groups: &mut Vec<Value>) -> usize {
    let mut removed = 0;
    for group in groups.iter_mut() {
        if let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) {
            let before = list.len();
            list.retain(|h| !is_ours(h));
            removed += before - list.len();
        }
    }
    groups.retain(|g| {
        g.get("hooks")
            .and_then(Value::as_array)
            .is_none_or(|list| !list.is_empty())
    });
    removed
}

/// A hook entry ctxkit wrote: a command whose program is named `ctxkit` and that ends with
/// ` hook claude-code`.
fn is_ours(hook: &Value) -> bool {
    let Some(command) = hook.get("command").and_then(Value::as_str) else {
        return false;
    };
    let Some(program) = command.strip_suffix(SUBCOMMAND) else {
        return false;
    };
    let program = program.trim_matches(['"', '\'']);
    Path::new(program)
        .file_name()
        .is_some_and(|n| n == "ctxkit" || n == "ctxkit.exe")
}

/// A path quoted for the shell Claude Code runs the command with, when it needs quoting.
fn quote(path: &str) -> String {
    if path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:@".contains(c))
    {
        path.to_string()
    } else {
        format!("'{}'", path.replace('\'', r"'\''"))
    }
}

/// Write `settings` to `path` atomically: a temporary file in the same folder, renamed over it.
fn write(path: &Path, settings: &Value) -> Result<(), CliError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let fail = |e: std::io::Error| CliError::new(format!("cannot write `{}`: {e}", path.display()));
    std::fs::create_dir_all(dir).map_err(fail)?;
    let mut text = serde_json::to_string_pretty(settings)?;
    text.push('\n');
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
    tmp.write_all(text.as_bytes()).map_err(fail)?;
    // Keep the file's permissions (a user may have made it private).
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(tmp.path(), meta.permissions()).map_err(fail)?;
    }
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_its_own_entries_only() {
        let ours = |c: &str| is_ours(&json!({"type": "command", "command": c}));
        assert!(ours("/usr/local/bin/ctxkit hook claude-code"));
        assert!(ours("'/home/a b/ctxkit' hook claude-code"));
        assert!(!ours("/usr/bin/other hook claude-code"));
        assert!(!ours("/usr/local/bin/ctxkit hook codex"));
        assert!(!ours("echo hi"));
    }

    #[test]
    fn quotes_paths_that_need_it() {
        assert_eq!(quote("/usr/bin/ctxkit"), "/usr/bin/ctxkit");
        assert_eq!(quote("/a b/ctxkit"), "'/a b/ctxkit'");
        assert_eq!(quote("/it's/ctxkit"), r"'/it'\''s/ctxkit'");
    }
}
