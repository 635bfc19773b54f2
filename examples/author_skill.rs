//! Authoring a skill with triggers and checking it the way `ctxkit skills validate` and
//! `ctxkit skills match` do.
//!
//! Run with `cargo run --example author_skill`. The same checks from the command line:
//!
//! ```sh
//! cargo run -- skills --dir my-skills validate
//! cargo run -- skills --dir my-skills match "how do I resize a pod?"
//! ```

use ctxkit_skills::{SelectOptions, SkillIndex, SkillRoot, Source};

const SKILL: &str = r#"---
name: k8s-ops
description: Operate Kubernetes workloads safely; use for kubectl, pods, deployments and rollouts.
triggers:
  keywords: [kubectl, pod, pods, deployment, rollout]
  verbs: [scale, drain]
  patterns: ['k8s|kubernetes']
---
# Kubernetes operations

1. Check the context first: `kubectl config current-context`.
2. Prefer `kubectl rollout restart` to deleting pods by hand.
"#;

fn main() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let folder = dir.path().join("k8s-ops");
    std::fs::create_dir_all(&folder)?;
    std::fs::write(folder.join("SKILL.md"), SKILL)?;
    // A second skill with a slip in it, to show what validation reports.
    let broken = dir.path().join("Broken_Skill");
    std::fs::create_dir_all(&broken)?;
    std::fs::write(
        broken.join("SKILL.md"),
        "---\nname: Broken_Skill\ntriggers: ['', podcast]\n---\nNo description.",
    )?;

    let index = SkillIndex::load(&[SkillRoot::new(dir.path(), Source::Project)]);
    println!("validate: {} skills loaded", index.len());
    for d in index.diagnostics() {
        println!("  {d}");
    }

    for message in [
        "How do I scale the deployment?",
        "Play the new podcast",
        "Restart a pod on k8s",
    ] {
        let selected = index.select(&[message], &[], &SelectOptions::default());
        println!("match {message:?}:");
        if selected.is_empty() {
            println!("  nothing fires (`pod` is a whole word: \"podcast\" does not count)");
        }
        for s in selected {
            println!("  {} score {} — triggers {:?}", s.name, s.score, s.triggers);
        }
    }
    Ok(())
}
