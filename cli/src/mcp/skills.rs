//! Skills as MCP resources, prompts and Skills-extension (SEP-2640) entries. A skill folder is
//! published as its author keeps it: the frontmatter as written, and every file of
//! [`Skill::files`] at `skill://NAME/PATH`, byte-exact with its digest. A URI is looked up
//! among loaded skills' names and then among the paths that skill lists, never turned into a
//! path, so no request can make the server read a file the listing does not name.
//!
//! A skill that is not a folder with frontmatter (a convention file such as `AGENTS.md`)
//! has no files to publish; it is served as one `SKILL.md` rendered from the index, with
//! the name and description it was loaded with.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use base64::Engine;
use ctxkit_skills::{Skill, SkillFile, SkillFileError, SkillIndex};
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use rmcp::model::{
    Prompt, PromptArgument, PromptMessage, Resource, ResourceContents, Role, SkillFrontmatter, SkillResource,
    SkillResources,
};
use rmcp::ErrorData;

const SCHEME: &str = "skill://";
const SKILL_MD: &str = "SKILL.md";
const MARKDOWN: &str = "text/markdown";
/// The most characters of a prompt's `request` argument kept.
pub(super) const MAX_REQUEST_CHARS: usize = 10_000;
/// Characters a file path in a URI keeps as they are: RFC 3986's unreserved ones and `/`.
const PATH: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~')
    .remove(b'/');

/// Whether `name` can stand in a `skill://NAME/SKILL.md` URI as it is: the agentskills.io
/// characters (and `_`, `.`). A skill whose name needs escaping is still a tool answer, just
/// not a resource.
fn uri_safe(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The URI of the file at `path` in a skill.
fn file_uri(skill: &Skill, path: &str) -> String {
    format!("{SCHEME}{}/{}", skill.name, utf8_percent_encode(path, PATH))
}

/// The resource URI of a skill's `SKILL.md`.
pub(super) fn uri(skill: &Skill) -> Option<String> {
    uri_safe(&skill.name).then(|| file_uri(skill, SKILL_MD))
}

/// The loaded skill a `skill://NAME/PATH` URI names, and the path (decoded) it asks for.
pub(super) fn by_uri<'a>(index: &'a SkillIndex, uri: &str) -> Option<(&'a Skill, String)> {
    let (name, path) = uri.strip_prefix(SCHEME)?.split_once('/')?;
    let path = percent_decode_str(path).decode_utf8().ok()?.into_owned();
    uri_safe(name)
        .then(|| index.get(name))
        .flatten()
        .map(|s| (s, path))
}

/// The skill whose `SKILL.md` a URI names (what `skills/get` takes).
pub(super) fn skill_by_uri<'a>(index: &'a SkillIndex, uri: &str) -> Option<&'a Skill> {
    by_uri(index, uri)
        .filter(|(_, path)| path == SKILL_MD)
        .map(|(s, _)| s)
}

/// The files a skill publishes as written, or `None` when it is served rendered (see the
/// module's docs).
fn published(skill: &Skill) -> Option<Vec<SkillFile>> {
    skill.frontmatter.as_ref()?;
    let files = skill.files();
    files.iter().any(|f| f.path == SKILL_MD).then_some(files)
}

/// A `SKILL.md` rendered from the index: the name and description as frontmatter, then the
/// body, for a skill with no folder to publish.
fn skill_md(skill: &Skill) -> String {
    let quote = |s: &str| serde_json::Value::String(s.to_string()).to_string();
    format!(
        "---\nname: {}\ndescription: {}\n---\n\n{}",
        quote(&skill.name),
        quote(&skill.description),
        skill.body
    )
}

/// Every skill with a URI, its `SKILL.md`, in catalog order.
pub(super) fn resources(index: &SkillIndex) -> Vec<Resource> {
    index
        .ranked()
        .filter_map(|s| {
            let uri = uri(s)?;
            let size = match published(s) {
                Some(files) => files.iter().find(|f| f.path == SKILL_MD).map_or(0, |f| f.size),
                None => skill_md(s).len() as u64,
            };
            Some(
                Resource::new(uri, s.name.clone())
                    .with_description(s.description.clone())
                    .with_mime_type(MARKDOWN)
                    .with_size(size),
            )
        })
        .collect()
}

/// The media type of a skill file, by its extension and whether its bytes are text (which
/// decides text or blob); any other text is plain, any other binary an octet stream.
fn mime_type(path: &str, text: bool) -> &'static str {
    let extension = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match (extension.as_deref(), text) {
        (Some("md" | "markdown"), true) => MARKDOWN,
        (Some("json"), true) => "application/json",
        (Some("svg"), true) => "image/svg+xml",
        (Some("png"), false) => "image/png",
        (Some("jpg" | "jpeg"), false) => "image/jpeg",
        (Some("pdf"), false) => "application/pdf",
        (_, true) => "text/plain",
        (_, false) => "application/octet-stream",
    }
}

/// The contents of the file at `path` of a skill: text when its bytes are UTF-8, else a
/// base64 blob, so either way the client gets the bytes on disk.
pub(super) fn contents(skill: &Skill, path: &str, uri: &str) -> Result<ResourceContents, ErrorData> {
    if published(skill).is_none() {
        return match path {
            SKILL_MD => Ok(ResourceContents::text(skill_md(skill), uri).with_mime_type(MARKDOWN)),
            _ => Err(not_listed()),
        };
    }
    let bytes = skill.read_file(path).map_err(|e| match e {
        SkillFileError::NotListed => not_listed(),
        refused => ErrorData::invalid_params(refused.to_string(), None),
    })?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => ResourceContents::text(text, uri).with_mime_type(mime_type(path, true)),
        Err(e) => ResourceContents::blob(
            base64::engine::general_purpose::STANDARD.encode(e.as_bytes()),
            uri,
        )
        .with_mime_type(mime_type(path, false)),
    })
}

fn not_listed() -> ErrorData {
    ErrorData::resource_not_found(
        "no skill file has that URI; skills/get lists a skill's files",
        None,
    )
}

/// The Skills-extension (SEP-2640) entries last built, by skill file, with what each was built
/// from: an entry is rebuilt only when its skill or one of its files changed (by size and
/// modification time, as a listing sees them), so `skills/list` reads and hashes a file once,
/// not on every request. Shared by every session of a server; it keeps the entries of the
/// last listing and nothing else.
#[derive(Default)]
pub(crate) struct Entries(Mutex<HashMap<PathBuf, Built>>);

/// One skill's entry and what it was built from.
struct Built {
    hash: String,
    files: Vec<SkillFile>,
    entry: rmcp::model::Skill,
}

impl Entries {
    /// Every skill's entry, in catalog order (blocking: it may read files).
    pub(super) fn all(&self, index: &SkillIndex) -> Vec<rmcp::model::Skill> {
        let mut memo = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut kept = HashMap::new();
        let entries = index
            .ranked()
            .filter_map(|skill| {
                let built = entry(skill, &mut memo)?;
                let entry = built.entry.clone();
                kept.insert(skill.path.clone(), built);
                Some(entry)
            })
            .collect();
        *memo = kept;
        entries
    }

    /// One skill's entry (blocking: it may read files).
    pub(super) fn one(&self, skill: &Skill) -> Option<rmcp::model::Skill> {
        let mut memo = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let built = entry(skill, &mut memo)?;
        let entry = built.entry.clone();
        memo.insert(skill.path.clone(), built);
        Some(entry)
    }
}

/// A skill's entry: the one in `memo` when nothing it was built from changed, else a new one.
fn entry(skill: &Skill, memo: &mut HashMap<PathBuf, Built>) -> Option<Built> {
    let uri = uri(skill)?;
    let Some(files) = published(skill) else {
        let rendered = vec![SkillResource::from_bytes(uri.clone(), skill_md(skill).as_bytes())];
        let entry = rmcp::model::Skill::new(uri, served_frontmatter(skill), SkillResources::Files(rendered));
        return Some(Built {
            hash: skill.hash.clone(),
            files: Vec::new(),
            entry,
        });
    };
    if let Some(built) = memo.remove(&skill.path) {
        if built.hash == skill.hash && built.files == files {
            return Some(built);
        }
    }
    let mut frontmatter = served_frontmatter(skill);
    let mut fields = skill.frontmatter_fields().unwrap_or_default();
    // The name is the one the skill is served under, which its URI ends in; the author's
    // description when it is one string, else the one ctxkit loaded.
    fields.remove("name");
    if let Some(serde_json::Value::String(description)) = fields.remove("description") {
        frontmatter.description = description;
    }
    frontmatter.extra = fields;
    let mut read = Vec::new();
    let mut whole = true;
    let resources = skill
        .read_files()
        .filter_map(|(f, bytes)| {
            let resource = match bytes {
                Ok(bytes) => Some(SkillResource::from_bytes(file_uri(skill, &f.path), &bytes)),
                Err(e) => {
                    tracing::warn!(skill = %skill.name, file = %f.path, "skill file left out of its entry: {e}");
                    whole = false;
                    None
                }
            };
            read.push(f);
            resource
        })
        .collect();
    let entry = rmcp::model::Skill::new(uri, frontmatter, SkillResources::Files(resources));
    Some(Built {
        hash: skill.hash.clone(),
        // A file that could not be read is tried again next time.
        files: if whole { read } else { Vec::new() },
        entry,
    })
}

/// The name and description ctxkit loaded the skill with.
fn served_frontmatter(skill: &Skill) -> SkillFrontmatter {
    SkillFrontmatter::new(skill.name.clone(), skill.description.clone())
}

/// Every skill meant to be invoked as `/name`, as a prompt with an optional request.
pub(super) fn prompts(index: &SkillIndex) -> Vec<Prompt> {
    index
        .ranked()
        .filter(|s| s.user_invocable == Some(true))
        .map(|s| {
            let argument = PromptArgument::new("request")
                .with_description("What to do with the skill (optional).")
                .with_required(false);
            Prompt::new(s.name.clone(), Some(s.description.clone()), Some(vec![argument]))
        })
        .collect()
}

/// A user-invocable skill by name; other skills are not prompts.
pub(super) fn prompt_skill<'a>(index: &'a SkillIndex, name: &str) -> Option<&'a Skill> {
    index.get(name).filter(|s| s.user_invocable == Some(true))
}

/// The prompt's one user message: the skill's instructions, then the request when given.
pub(super) fn prompt_message(skill: &Skill, request: Option<&str>) -> PromptMessage {
    let mut text = format!("# {}\n{}\n\n{}", skill.name, skill.description, skill.body);
    if let Some(request) = request.map(str::trim).filter(|r| !r.is_empty()) {
        let request: String = request.chars().take(MAX_REQUEST_CHARS).collect();
        text.push_str("\n\n## Request\n");
        text.push_str(&request);
    }
    PromptMessage::new_text(Role::User, text)
}

/// What identifies the skills the server lists: a change means clients should list again.
pub(super) fn fingerprint(index: &SkillIndex) -> Vec<(String, String, bool)> {
    index
        .ranked()
        .map(|s| (s.name.clone(), s.hash.clone(), s.user_invocable == Some(true)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxkit_skills::Source;

    fn index(text: &str) -> SkillIndex {
        let (skill, _) = Skill::parse("s/SKILL.md".as_ref(), text, None);
        SkillIndex::build(vec![skill.unwrap().with_root(Source::Project, 0)], Vec::new())
    }

    #[test]
    fn uris_name_loaded_skills_only() {
        let index = index("---\nname: deploy\ndescription: Ship it\n---\nRun the script.");
        assert_eq!(
            skill_by_uri(&index, "skill://deploy/SKILL.md").unwrap().name,
            "deploy"
        );
        for uri in [
            "skill://../deploy/SKILL.md",
            "skill://deploy/../../etc/passwd",
            "skill:///etc/passwd",
            "file:///etc/passwd",
            "skill://deploy/SKILL.md/",
            "skill://other/SKILL.md",
        ] {
            assert!(skill_by_uri(&index, uri).is_none(), "{uri}");
        }
    }

    #[test]
    fn served_skill_md_quotes_its_frontmatter() {
        let index = index("---\nname: deploy\ndescription: \"a: b\\n---\"\n---\nRun.");
        let text = skill_md(index.get("deploy").unwrap());
        assert!(text.starts_with("---\nname: \"deploy\"\ndescription: \"a: b\\n---\"\n---\n\nRun."));
    }
}
