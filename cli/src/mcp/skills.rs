//! Skills as MCP resources, prompts and Skills-extension entries, rendered from the index in
//! memory: a URI or a prompt name is looked up among loaded skills' names, never turned into
//! a path, so no request can make the server read a file.

use ctxkit_skills::{Skill, SkillIndex};
use rmcp::model::{
    Prompt, PromptArgument, PromptMessage, Resource, ResourceContents, Role, SkillFrontmatter, SkillResource,
    SkillResources,
};

const SCHEME: &str = "skill://";
const FILE: &str = "/SKILL.md";
const MARKDOWN: &str = "text/markdown";
/// The most characters of a prompt's `request` argument kept.
pub(super) const MAX_REQUEST_CHARS: usize = 10_000;

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

/// The resource URI of a skill's `SKILL.md`.
pub(super) fn uri(skill: &Skill) -> Option<String> {
    uri_safe(&skill.name).then(|| format!("{SCHEME}{}{FILE}", skill.name))
}

/// The skill a `skill://NAME/SKILL.md` URI names, if one is loaded.
pub(super) fn by_uri<'a>(index: &'a SkillIndex, uri: &str) -> Option<&'a Skill> {
    let name = uri.strip_prefix(SCHEME)?.strip_suffix(FILE)?;
    uri_safe(name).then(|| index.get(name)).flatten()
}

/// A `SKILL.md` as served: the name and description as frontmatter, then the body. It is
/// written from the index (YAML-quoted), so it is what ctxkit parsed, not the file's bytes.
pub(super) fn skill_md(skill: &Skill) -> String {
    let quote = |s: &str| serde_json::Value::String(s.to_string()).to_string();
    format!(
        "---\nname: {}\ndescription: {}\n---\n\n{}",
        quote(&skill.name),
        quote(&skill.description),
        skill.body
    )
}

/// Every skill with a URI, in catalog order.
pub(super) fn resources(index: &SkillIndex) -> Vec<Resource> {
    index
        .ranked()
        .filter_map(|s| {
            let uri = uri(s)?;
            Some(
                Resource::new(uri, s.name.clone())
                    .with_description(s.description.clone())
                    .with_mime_type(MARKDOWN)
                    .with_size(skill_md(s).len() as u64),
            )
        })
        .collect()
}

/// The contents of one skill resource.
pub(super) fn contents(skill: &Skill, uri: &str) -> ResourceContents {
    ResourceContents::text(skill_md(skill), uri).with_mime_type(MARKDOWN)
}

/// A Skills-extension (SEP-2640) entry: one file, the served `SKILL.md`, with its digest.
pub(super) fn extension_entry(skill: &Skill) -> Option<rmcp::model::Skill> {
    let uri = uri(skill)?;
    let text = skill_md(skill);
    Some(rmcp::model::Skill::new(
        uri.clone(),
        SkillFrontmatter::new(skill.name.clone(), skill.description.clone()),
        SkillResources::Files(vec![SkillResource::from_bytes(uri, text.as_bytes())]),
    ))
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
        assert_eq!(by_uri(&index, "skill://deploy/SKILL.md").unwrap().name, "deploy");
        for uri in [
            "skill://../deploy/SKILL.md",
            "skill://deploy/../../etc/passwd",
            "skill:///etc/passwd",
            "file:///etc/passwd",
            "skill://deploy/SKILL.md/",
            "skill://other/SKILL.md",
        ] {
            assert!(by_uri(&index, uri).is_none(), "{uri}");
        }
    }

    #[test]
    fn served_skill_md_quotes_its_frontmatter() {
        let index = index("---\nname: deploy\ndescription: \"a: b\\n---\"\n---\nRun.");
        let text = skill_md(index.get("deploy").unwrap());
        assert!(text.starts_with("---\nname: \"deploy\"\ndescription: \"a: b\\n---\"\n---\n\nRun."));
    }
}
