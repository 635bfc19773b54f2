//! `ctxkit hook install|uninstall claude-code`: ctxkit's entries in Claude Code's
//! `settings.json` (<https://code.claude.com/docs/en/settings>, hooks format in
//! <https://code.claude.com/docs/en/hooks>):
//!
//! ```json
//! {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "/abs/ctxkit hook claude-code", "timeout": 10}]}]}}
//! ```
//!
//! Every other setting and hook is kept byte for byte: the file is edited as it is written —
//! key order, numbers of any size, escapes and even duplicate keys stay — and only the lists
//! ctxkit changes are re-emitted. ctxkit's own entries are recognised by their exact shape,
//! `{"type": "command", "command": "ABSOLUTE/PATH/ctxkit hook claude-code"}` (any path, so an
//! upgrade that moved the binary replaces the old entry); a user's hook that merely mentions
//! ctxkit (`my-wrapper --log /var/log/ctxkit hook claude-code`) is never touched. Installing
//! twice gives the same file. The file is reached without following a link
//! ([`ConfinedFile`]) and replaced atomically; a file that is not a JSON object is refused with
//! one sentence and left untouched.

use std::path::Path;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::confined_file::ConfinedFile;
use crate::error::CliError;

/// The events ctxkit answers, in the order they are written.
const EVENTS: [&str; 2] = ["SessionStart", "UserPromptSubmit"];
/// What follows the binary's path in ctxkit's command.
const SUBCOMMAND: [&str; 2] = ["hook", "claude-code"];
/// Seconds Claude Code waits for the hook (its default is 60): a slow hook must not hold the
/// prompt for long.
const TIMEOUT_SECS: u64 = 10;
/// A settings file larger than this is not ours to rewrite.
const MAX_SETTINGS_BYTES: u64 = 4 << 20;

/// Add or replace ctxkit's entries in `file`.
pub(super) fn install(file: &ConfinedFile) -> Result<(), CliError> {
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|e| CliError::caused_by(format!("cannot find the path of the running ctxkit: {e}"), e))?;
    let command = format!("{} {}", quote(&exe.to_string_lossy()), SUBCOMMAND.join(" "));
    let entry = serde_json::json!({
        "hooks": [{"type": "command", "command": command, "timeout": TIMEOUT_SECS}]
    });
    let mut settings = Settings::read(file)?;
    settings.edit(|groups| {
        remove_ours(groups);
        groups.push(Json::new(&entry));
    })?;
    settings.write()?;
    println!(
        "Installed ctxkit's Claude Code hooks ({}) in {}",
        EVENTS.join(", "),
        file.path().display()
    );
    Ok(())
}

/// Remove ctxkit's entries from `file`; other hooks and settings stay.
pub(super) fn uninstall(file: &ConfinedFile) -> Result<(), CliError> {
    let mut settings = Settings::read(file)?;
    if settings.missing {
        println!("No {}: nothing to remove", file.path().display());
        return Ok(());
    }
    let mut removed = 0;
    settings.edit(|groups| removed += remove_ours(groups))?;
    if removed > 0 {
        settings.write()?;
    }
    println!(
        "Removed {removed} ctxkit hook entr{} from {}",
        if removed == 1 { "y" } else { "ies" },
        file.path().display()
    );
    Ok(())
}

/// A settings file being edited.
struct Settings<'a> {
    file: &'a ConfinedFile,
    /// The top-level object's members.
    members: Vec<(String, Json)>,
    /// There was no file.
    missing: bool,
}

impl<'a> Settings<'a> {
    /// The settings in `file` (none when there is no file), which must be a JSON object.
    fn read(file: &'a ConfinedFile) -> Result<Settings<'a>, CliError> {
        let bytes = file.read(MAX_SETTINGS_BYTES)?;
        let missing = bytes.is_none();
        let bytes = bytes.unwrap_or_default();
        let text = std::str::from_utf8(&bytes).map_err(|_| {
            CliError::new(format!(
                "`{}` is not UTF-8 text; nothing was written",
                file.path().display()
            ))
        })?;
        if text.trim().is_empty() {
            return Ok(Settings {
                file,
                members: Vec::new(),
                missing,
            });
        }
        let top = serde_json::from_str::<Box<RawValue>>(text).map_err(|e| {
            CliError::new(format!(
                "`{}` is not valid JSON ({e}); fix it first, nothing was written",
                file.path().display()
            ))
        })?;
        let members = Json::Text(top).into_object().ok_or_else(|| {
            CliError::new(format!(
                "`{}` is not a JSON object; nothing was written",
                file.path().display()
            ))
        })?;
        Ok(Settings {
            file,
            members,
            missing,
        })
    }

    /// Apply `change` to the matcher-group list of every event ctxkit answers (an empty list
    /// when the event has none, and when `hooks` is missing); a list left empty is removed,
    /// and `hooks` too when nothing is left in it. Every member keeps its place.
    fn edit(&mut self, mut change: impl FnMut(&mut Vec<Json>)) -> Result<(), CliError> {
        let path = self.file.path();
        let refuse =
            |what: String| CliError::new(format!("{what} in `{}`; nothing was written", path.display()));
        edit_member(&mut self.members, "hooks", |hooks| {
            let mut hooks = match hooks {
                None => Vec::new(),
                Some(hooks) => hooks
                    .into_object()
                    .ok_or_else(|| refuse("`hooks` is not a JSON object".into()))?,
            };
            for event in EVENTS {
                edit_member(&mut hooks, event, |groups| {
                    let mut groups = match groups {
                        None => Vec::new(),
                        Some(groups) => groups
                            .into_list()
                            .ok_or_else(|| refuse(format!("`hooks.{event}` is not a list")))?,
                    };
                    change(&mut groups);
                    Ok((!groups.is_empty()).then_some(Json::List(groups)))
                })
                .map_err(|e| e.unwrap_or_else(|| refuse(format!("`hooks.{event}` is set twice"))))?;
            }
            Ok((!hooks.is_empty()).then_some(Json::Object(hooks)))
        })
        .map_err(|e| e.unwrap_or_else(|| refuse("`hooks` is set twice".into())))
    }

    fn write(&self) -> Result<(), CliError> {
        let mut text = serde_json::to_string_pretty(&Members(&self.members))?;
        text.push('\n');
        self.file.write(text.as_bytes())
    }
}

/// Replace the member `key` of `members` by what `change` makes of it, in its place (at the
/// end when it was missing; removed when `change` gives `None`). `Err(None)` when the key is
/// there twice — which one would the host read? — and `Err(Some(_))` when `change` fails.
fn edit_member(
    members: &mut Vec<(String, Json)>,
    key: &str,
    change: impl FnOnce(Option<Json>) -> Result<Option<Json>, CliError>,
) -> Result<(), Option<CliError>> {
    let mut found = members
        .iter()
        .enumerate()
        .filter(|(_, (k, _))| k == key)
        .map(|(i, _)| i);
    let at = match (found.next(), found.next()) {
        (Some(_), Some(_)) => return Err(None),
        (at, _) => at,
    };
    let old = at.map(|i| std::mem::replace(&mut members[i].1, Json::List(Vec::new())));
    match (change(old).map_err(Some)?, at) {
        (Some(new), Some(i)) => members[i].1 = new,
        (Some(new), None) => members.push((key.to_string(), new)),
        (None, Some(i)) => {
            members.remove(i);
        }
        (None, None) => {}
    }
    Ok(())
}

/// A JSON value as the file has it. What ctxkit edits is opened into objects and lists;
/// everything else keeps its exact text — numbers of any size, escapes, key order, and
/// duplicate keys.
#[derive(Clone, Debug)]
enum Json {
    Text(Box<RawValue>),
    Object(Vec<(String, Json)>),
    List(Vec<Json>),
}

impl Json {
    /// A value ctxkit writes, opened all the way down so it is printed like the file's.
    fn new(value: &Value) -> Json {
        match value {
            Value::Object(map) => Json::Object(map.iter().map(|(k, v)| (k.clone(), Json::new(v))).collect()),
            Value::Array(items) => Json::List(items.iter().map(Json::new).collect()),
            scalar => Json::Text(serde_json::value::to_raw_value(scalar).expect("a Value always serializes")),
        }
    }

    /// The members of an object, in order; `None` for anything else.
    fn into_object(self) -> Option<Vec<(String, Json)>> {
        match self {
            Json::Object(members) => Some(members),
            Json::Text(raw) if raw.get().starts_with('{') => {
                let OpenObject(members) = serde_json::from_str(raw.get()).ok()?;
                Some(members.into_iter().map(|(k, v)| (k, Json::Text(v))).collect())
            }
            _ => None,
        }
    }

    /// The items of a list; `None` for anything else.
    fn into_list(self) -> Option<Vec<Json>> {
        match self {
            Json::List(items) => Some(items),
            Json::Text(raw) if raw.get().starts_with('[') => {
                let items: Vec<Box<RawValue>> = serde_json::from_str(raw.get()).ok()?;
                Some(items.into_iter().map(Json::Text).collect())
            }
            _ => None,
        }
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Text(raw) => raw.serialize(serializer),
            Json::Object(members) => Members(members).serialize(serializer),
            Json::List(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
        }
    }
}

/// An object's members serialized in order, duplicates included.
struct Members<'a>(&'a [(String, Json)]);

impl Serialize for Members<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// An object read member by member, each value kept as its text.
struct OpenObject(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for OpenObject {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = OpenObject;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<OpenObject, A::Error> {
                let mut members = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    members.push((key, map.next_value::<Box<RawValue>>()?));
                }
                Ok(OpenObject(members))
            }
        }
        deserializer.deserialize_map(Visit)
    }
}

/// Remove ctxkit's entries from the matcher groups of one event, and the groups they leave
/// empty; the number of entries removed. A group ctxkit does not change keeps its text.
fn remove_ours(groups: &mut Vec<Json>) -> usize {
    let mut removed = 0;
    groups.retain_mut(|group| {
        let Some(mut members) = group.clone().into_object() else {
            return true;
        };
        let mut emptied = false;
        let mut changed = false;
        let _ = edit_member(&mut members, "hooks", |hooks| {
            let Some(list) = hooks.clone().and_then(Json::into_list) else {
                return Ok(hooks);
            };
            let before = list.len();
            let kept: Vec<Json> = list.into_iter().filter(|h| !is_ours(h)).collect();
            changed = kept.len() < before;
            removed += before - kept.len();
            emptied = kept.is_empty();
            Ok(if changed { Some(Json::List(kept)) } else { hooks })
        });
        if changed {
            *group = Json::Object(members);
        }
        !(changed && emptied)
    });
    removed
}

/// An entry `install` wrote: a command hook whose command is exactly one absolute path to a
/// program named `ctxkit`, quoted as `install` quotes it, then `hook claude-code`.
fn is_ours(hook: &Json) -> bool {
    let Ok(hook) = serde_json::to_value(hook) else {
        return false;
    };
    let (Some("command"), Some(command)) = (
        hook.get("type").and_then(Value::as_str),
        hook.get("command").and_then(Value::as_str),
    ) else {
        return false;
    };
    let Ok(words) = shell_words::split(command) else {
        return false;
    };
    let [program, rest @ ..] = words.as_slice() else {
        return false;
    };
    let path = Path::new(program);
    rest == SUBCOMMAND
        && path.is_absolute()
        && path
            .file_name()
            .is_some_and(|n| n == "ctxkit" || n == "ctxkit.exe")
        && *command == format!("{} {}", quote(program), SUBCOMMAND.join(" "))
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(command: &str) -> Json {
        Json::new(&json!({"type": "command", "command": command}))
    }

    #[test]
    fn recognises_its_own_entries_only() {
        let ours = |c: &str| is_ours(&entry(c));
        assert!(ours("/usr/local/bin/ctxkit hook claude-code"));
        assert!(ours("'/home/a b/ctxkit' hook claude-code"));
        assert!(!ours("/usr/bin/other hook claude-code"));
        assert!(!ours("/usr/local/bin/ctxkit hook codex"));
        assert!(!ours("echo hi"));
        // A user's own hooks that merely mention ctxkit.
        assert!(!ours("my-wrapper --log /var/log/ctxkit hook claude-code"));
        assert!(!ours("cd /srv && /opt/tools/ctxkit hook claude-code"));
        assert!(!ours("ctxkit hook claude-code"), "not an absolute path");
        assert!(!ours("/usr/bin/ctxkit hook claude-code --strict"));
        assert!(
            !ours("\"/usr/bin/ctxkit\" hook claude-code"),
            "not quoted as install quotes"
        );
        assert!(!is_ours(&Json::new(
            &json!({"type": "prompt", "command": "/usr/bin/ctxkit hook claude-code"})
        )));
    }

    #[test]
    fn quotes_paths_that_need_it() {
        assert_eq!(quote("/usr/bin/ctxkit"), "/usr/bin/ctxkit");
        assert_eq!(quote("/a b/ctxkit"), "'/a b/ctxkit'");
        assert_eq!(quote("/it's/ctxkit"), r"'/it'\''s/ctxkit'");
    }
}
