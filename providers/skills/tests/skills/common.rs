//! Helpers shared by the skill tests: build skills and indexes from frontmatter text.
#![allow(dead_code)]

use ctxkit_skills::{SelectOptions, Skill, SkillIndex, Source};

/// A skill from a name, triggers (YAML flow list or mapping) and extra frontmatter lines.
pub(crate) fn skill(name: &str, triggers: &str, extra: &str) -> Skill {
    skill_with_body(name, triggers, extra, &format!("Instructions of {name}."))
}

pub(crate) fn skill_with_body(name: &str, triggers: &str, extra: &str, body: &str) -> Skill {
    let triggers = if triggers.is_empty() {
        String::new()
    } else {
        format!("triggers: {triggers}\n")
    };
    let text = format!("---\nname: {name}\ndescription: The {name} skill\n{triggers}{extra}---\n{body}");
    let path = format!("skills/{name}/SKILL.md");
    let (parsed, diags) = Skill::parse(path.as_ref(), &text, Some(name));
    let parsed = parsed.unwrap_or_else(|| panic!("{name} did not parse: {diags:?}"));
    parsed.with_root(Source::Project, 250)
}

pub(crate) fn index(skills: Vec<Skill>) -> SkillIndex {
    SkillIndex::build(skills, Vec::new())
}

/// Names selected for one message with default options.
pub(crate) fn pick(index: &SkillIndex, message: &str) -> Vec<String> {
    pick_with(index, &[message], &SelectOptions::default())
}

pub(crate) fn pick_with(index: &SkillIndex, messages: &[&str], options: &SelectOptions) -> Vec<String> {
    index
        .select(messages, &[], options)
        .into_iter()
        .map(|s| s.name)
        .collect()
}
