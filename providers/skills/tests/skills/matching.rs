//! Matching semantics (lowercasing, whole words, scoring, ranking, the cap, explicit invocation), table-driven.

use crate::common;

use common::{index, pick, pick_with, skill};
use ctxkit_skills::{Reason, SelectOptions, PAST_THE_CAP};

/// (trigger list, message, should fire)
const CASES: &[(&str, &str, bool)] = &[
    // Case variants and punctuation around the trigger.
    ("[hello]", "HELLO there", true),
    ("[hello]", "Hello, world!", true),
    ("[hello]", "(hello)", true),
    ("[hello]", "say 'hello'.", true),
    ("[Docker Compose]", "how do I run docker compose up?", true),
    // Whole-word traps.
    ("[hello]", "I saw Othello yesterday", false),
    ("[sed]", "I used the tool", false),
    ("[sed]", "use sed to replace", true),
    ("[pod]", "a new podcast episode", false),
    ("[pod]", "restart the pod", true),
    // Regular English inflections fire the trigger, each as a whole word.
    ("[test]", "run the tests", true),
    ("[greet]", "I greeted Bob in French yesterday", true),
    ("[dockerfile]", "my Dockerfiles are slow", true),
    ("[plot]", "we plotted it", true),
    ("[plot]", "a pen plotter", false),
    ("[slow query]", "two slow queries", true),
    ("[translate]", "translating the docs", true),
    ("[translate]", "the translator's notes", false),
    ("[webhook]", "webhooks fail", true),
    ("[score]", "scoring rules", true),
    ("[git]", "a digit", false),
    ("[test]", "snake_test_case", false),
    // Unicode lowercasing.
    ("[привет]", "ПРИВЕТ, Мир", true),
    ("[привет]", "приветствие", false),
    ("[größe]", "Welche GRÖSSE? nein: Größe", true),
    ("[über]", "ÜBER alles", true),
    ("[straße]", "STRASSE", false),
    // Scripts without spaces match inside text.
    ("[日本語]", "日本語の文法を教えて", true),
    ("[こんにちは]", "みなさんこんにちは！", true),
    ("[สวัสดี]", "พูดสวัสดีครับ", true),
    ("[翻译]", "请帮我翻译这段话", true),
    // Mixed: a Latin word next to Han characters is not a whole word.
    ("[api]", "调用api接口", false),
    // Triggers with punctuation.
    ("[c++]", "Is this valid in C++?", true),
    ("[c++]", "I like c+++", true),
    ("[c#]", "write it in C#.", true),
    ("[c#]", "abc# tag", false),
    ("[.net]", "port it to .NET 8", true),
    ("[.net]", "visit example.net", true),
    ("[std::vector]", "use std::vector<int> here", true),
    ("[known_hosts]", "edit ~/.ssh/known_hosts now", true),
    ("[known_hosts]", "edit known_hosts_backup", false),
    ("['/automation:create']", "run /automation:create please", true),
];

#[test]
fn trigger_cases() {
    let mut failures = Vec::new();
    for (i, (triggers, message, expected)) in CASES.iter().enumerate() {
        let idx = index(vec![skill("s", triggers, "")]);
        let fired = !pick(&idx, message).is_empty();
        if fired != *expected {
            failures.push(format!(
                "case {i}: triggers {triggers} on {message:?}: expected {expected}, got {fired}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn overlapping_triggers_both_count() {
    let idx = index(vec![
        skill("compose", "[docker, docker compose]", ""),
        skill("plain", "[docker, kubernetes]", ""),
    ]);
    let sel = idx.select(&["docker compose up"], &[], &SelectOptions::default());
    assert_eq!(sel[0].name, "compose");
    assert_eq!(sel[0].score, 2);
    assert_eq!(sel[0].triggers, ["docker", "docker compose"]);
    assert_eq!(sel[1].score, 1);
}

#[test]
fn each_trigger_counts_once() {
    let idx = index(vec![skill("a", "[git]", ""), skill("b", "[git, commit]", "")]);
    let sel = idx.select(&["git git git git commit"], &[], &SelectOptions::default());
    assert_eq!((sel[0].name.as_str(), sel[0].score), ("b", 2));
    assert_eq!((sel[1].name.as_str(), sel[1].score), ("a", 1));
}

#[test]
fn a_trigger_counts_once_whichever_form_fired() {
    let idx = index(vec![
        skill("listed", "[webhook, webhooks]", ""),
        skill("plain", "[webhook, retry]", ""),
    ]);
    let sel = idx.select(&["the webhooks retry"], &[], &SelectOptions::default());
    // `webhooks` is a form of `webhook`: listing both does not count the word twice.
    assert_eq!((sel[0].name.as_str(), sel[0].score), ("plain", 2));
    assert_eq!((sel[1].name.as_str(), sel[1].score), ("listed", 1));
    assert_eq!(sel[1].triggers, ["webhook"]);
}

#[test]
fn ties_break_by_priority_then_name() {
    let idx = index(vec![
        skill("zeta", "[deploy]", "priority: 300\n"),
        skill("beta", "[deploy]", ""),
        skill("alpha", "[deploy]", ""),
        skill("low", "[deploy]", "priority: 10\n"),
    ]);
    let options = SelectOptions {
        max_skills: 10,
        ..Default::default()
    };
    assert_eq!(
        pick_with(&idx, &["deploy it"], &options),
        ["zeta", "alpha", "beta", "low"]
    );
}

#[test]
fn the_cap_keeps_the_best() {
    let idx = index(vec![
        skill("one", "[a1]", ""),
        skill("two", "[a1, a2]", ""),
        skill("three", "[a1, a2, a3]", ""),
        skill("four", "[a1, a2, a3, a4]", ""),
    ]);
    assert_eq!(pick(&idx, "a1 a2 a3 a4"), ["four", "three", "two"]);
    let one = SelectOptions {
        max_skills: 1,
        ..Default::default()
    };
    assert_eq!(pick_with(&idx, &["a1 a2 a3 a4"], &one), ["four"]);
}

#[test]
fn explicit_invocation_selects_outside_the_cap() {
    let idx = index(vec![
        skill("hello-extended", "[hello]", ""),
        skill("manual", "", "disable-model-invocation: true\n"),
        skill("x1", "[go]", ""),
        skill("x2", "[go]", ""),
    ]);
    let one = SelectOptions {
        max_skills: 1,
        ..Default::default()
    };
    let sel = idx.select(&["go: use /manual and $hello-extended, go"], &[], &one);
    let got: Vec<(&str, Reason)> = sel.iter().map(|s| (s.name.as_str(), s.reason)).collect();
    assert_eq!(
        got,
        [
            ("manual", Reason::Explicit),
            ("hello-extended", Reason::Explicit),
            ("x1", Reason::Triggered)
        ]
    );
    // Not a token: part of a path or a word.
    assert!(pick(&idx, "see docs/manual and a$manual").is_empty());
    // Unknown names select nothing.
    assert!(pick(&idx, "/nonexistent").is_empty());
}

#[test]
fn disable_model_invocation_is_explicit_only() {
    let idx = index(vec![skill(
        "danger",
        "[deploy]",
        "disable-model-invocation: true\nalways: true\n",
    )]);
    assert!(pick(&idx, "deploy now").is_empty());
    assert_eq!(pick(&idx, "deploy now with $danger"), ["danger"]);
}

#[test]
fn always_skills_are_selected_on_every_message_and_count_against_the_cap() {
    let idx = index(vec![
        skill("house-style", "", "always: true\n"),
        skill("greet", "[hello]", ""),
        skill("farewell", "[bye]", ""),
    ]);
    assert_eq!(pick(&idx, "what is 2+2?"), ["house-style"]);
    let cap = |max_skills| SelectOptions {
        max_skills,
        ..Default::default()
    };
    let reasons = |text: &str, max| {
        idx.select(&[text], &[], &cap(max))
            .iter()
            .map(|s| (s.name.clone(), s.reason))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        reasons("hello", 2),
        [
            ("house-style".into(), Reason::Always),
            ("greet".into(), Reason::Triggered)
        ]
    );
    // The always-on skill takes the one place; the triggered skill is left out, and said so.
    assert_eq!(reasons("hello", 1), [("house-style".into(), Reason::Always)]);
    let ranking = idx.rank(&["hello"], &[], &cap(1), None);
    let left: Vec<(&str, &str)> = ranking.near.iter().map(|n| (n.name.as_str(), n.why)).collect();
    assert_eq!(left, [("greet", PAST_THE_CAP)]);
    // With no place at all the always-on skill is left out too; a skill the user names is
    // outside the cap.
    assert_eq!(
        reasons("hello $farewell", 0),
        [("farewell".into(), Reason::Explicit)]
    );
    let ranking = idx.rank(&["hello"], &[], &cap(0), None);
    let left: Vec<&str> = ranking.near.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(left, ["house-style", "greet"]);
}

#[test]
fn invalid_regex_is_ignored_and_the_rest_works() {
    let idx = index(vec![skill(
        "k8s",
        "{keywords: [kubectl], patterns: ['pods?\\s+(crash', 'deploy(ment)?s?\\b']}",
        "",
    )]);
    assert_eq!(idx.skills()[0].triggers.patterns, ["deploy(ment)?s?\\b"]);
    assert_eq!(pick(&idx, "kubectl get"), ["k8s"]);
    let sel = idx.select(
        &["two Deployments failed, see kubectl"],
        &[],
        &SelectOptions::default(),
    );
    assert_eq!(sel[0].score, 2);
    assert_eq!(sel[0].triggers, ["kubectl", "deploy(ment)?s?\\b"]);
}

#[test]
fn verbs_and_keywords_and_patterns_all_score() {
    let idx = index(vec![skill(
        "ops",
        "{keywords: [server], verbs: [restart], patterns: ['error \\d+']}",
        "",
    )]);
    let sel = idx.select(
        &["Restart the server after error 503"],
        &[],
        &SelectOptions::default(),
    );
    assert_eq!(sel[0].score, 3);
}

#[test]
fn window_of_recent_user_messages() {
    let idx = index(vec![skill("greet", "[bonjour]", "")]);
    let follow_up = ["Say bonjour to Alice", "now do the same for Bob"];
    assert!(pick_with(&idx, &follow_up[1..], &SelectOptions::default()).is_empty());
    let window = SelectOptions {
        window: 2,
        ..Default::default()
    };
    assert_eq!(pick_with(&idx, &follow_up, &window), ["greet"]);
}

#[test]
fn empty_and_punctuation_triggers_never_fire() {
    let idx = index(vec![skill("s", "['', ' ', '...', '+', real]", "")]);
    assert_eq!(idx.skills()[0].triggers.keywords, ["real"]);
    assert!(pick(&idx, "... + anything at all").is_empty());
}

/// A skill described for what it does, without triggers.
fn described(name: &str, description: &str, extra: &str) -> ctxkit_skills::Skill {
    described_with(name, description, extra, &format!("Instructions of {name}."))
}

/// The same with its body.
fn described_with(name: &str, description: &str, extra: &str, body: &str) -> ctxkit_skills::Skill {
    let text = format!("---\nname: {name}\ndescription: {description}\n{extra}---\n{body}");
    let (parsed, diags) =
        ctxkit_skills::Skill::parse(format!("skills/{name}/SKILL.md").as_ref(), &text, Some(name));
    parsed
        .unwrap_or_else(|| panic!("{name} did not parse: {diags:?}"))
        .with_root(ctxkit_skills::Source::Project, 250)
}

fn library() -> ctxkit_skills::SkillIndex {
    index(vec![
        described(
            "pdf-tools",
            "Merge, split and rotate PDF documents; fill PDF forms.",
            "",
        ),
        described(
            "stripe-webhooks",
            "Verify Stripe webhook signatures and replay failed events.",
            "",
        ),
        described(
            "release-notes",
            "Write release notes for an app from its changelog and merged pull requests.",
            "",
        ),
        described(
            "k8s-deploy",
            "Deploy services to a Kubernetes cluster with Helm charts and rollbacks.",
            "",
        ),
        described(
            "docker-compose",
            "Run multi-container apps locally with Docker Compose files.",
            "",
        ),
        described(
            "sql-tuning",
            "Find slow SQL queries and fix them with indexes and better plans.",
            "",
        ),
        skill("greet", "[hello]", ""),
    ])
}

#[test]
fn a_skill_is_selected_by_its_description_by_default() {
    let idx = library();
    assert_eq!(
        pick(&idx, "rotate this pdf and merge it with the other PDF"),
        ["pdf-tools"]
    );
    assert_eq!(
        pick(&idx, "our stripe webhooks keep failing"),
        ["stripe-webhooks"]
    );
    // Inflected forms count: "queries" finds "query"-less "queries", "deploying" finds "deploy".
    assert_eq!(pick(&idx, "deploying to the kubernetes cluster"), ["k8s-deploy"]);
    let sel = idx.select(&["rotate this pdf"], &[], &SelectOptions::default());
    assert_eq!(sel[0].reason, Reason::Lexical);
    assert!(sel[0].evidence.score >= sel[0].evidence.floor);
    assert_eq!(sel[0].evidence.name_words, ["pdf"]);
    assert_eq!(sel[0].evidence.description_words, ["rotate"]);
    // Off: triggers only, as before.
    let triggers_only = SelectOptions {
        by_description: false,
        ..Default::default()
    };
    assert!(pick_with(&idx, &["rotate this pdf"], &triggers_only).is_empty());
}

#[test]
fn chit_chat_and_one_common_word_select_nothing() {
    let idx = library();
    for message in [
        "what is 2+2?",
        "thanks!",
        "tell me a joke",
        "good morning, how are you?",
        // One word of a description: never enough.
        "the app is nice",
        "my signature is on the form",
    ] {
        assert!(
            pick(&idx, message).is_empty(),
            "{message}: {:?}",
            pick(&idx, message)
        );
    }
}

#[test]
fn one_clear_winner_is_sent_alone() {
    let idx = library();
    // "docker" and "compose" name one skill; "deploy" alone touches another.
    assert_eq!(
        pick(&idx, "run docker compose files locally before we deploy"),
        ["docker-compose"]
    );
    let ranking = idx.rank(
        &["run docker compose files locally before we deploy"],
        &[],
        &SelectOptions::default(),
        None,
    );
    assert!(ranking.near.iter().all(|n| n.name != "docker-compose"));
}

#[test]
fn a_trigger_fires_as_it_always_did_and_ranks_with_the_rest() {
    let idx = library();
    let sel = idx.select(
        &["hello, rotate this pdf and merge the PDF files"],
        &[],
        &SelectOptions::default(),
    );
    let mut got: Vec<(&str, Reason)> = sel.iter().map(|s| (s.name.as_str(), s.reason)).collect();
    got.sort_by_key(|(name, _)| *name);
    assert_eq!(
        got,
        [("greet", Reason::Triggered), ("pdf-tools", Reason::Lexical)]
    );
    let greet = sel.iter().find(|s| s.name == "greet").unwrap();
    assert_eq!(greet.triggers, ["hello"]);
    assert!(greet.evidence.score >= ctxkit_skills::TRIGGER_WEIGHT);
}

#[test]
fn when_not_to_use_keeps_a_skill_out_of_what_it_says_it_is_not_for() {
    let idx = index(vec![
        described(
            "pdf-forms",
            "Fill and read PDF forms and documents.",
            "when_not_to_use: scanned paper images\n",
        ),
        described("ocr", "Read text from scanned paper images with OCR.", ""),
    ]);
    assert_eq!(pick(&idx, "fill this PDF form"), ["pdf-forms"]);
    let ranking = idx.rank(
        &["read the text of these scanned paper images of a pdf form"],
        &[],
        &SelectOptions::default(),
        None,
    );
    assert_eq!(
        ranking
            .selected
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        ["ocr"]
    );
    let near = ranking
        .near
        .iter()
        .find(|n| n.name == "pdf-forms")
        .expect("a near miss");
    assert_eq!(near.evidence.against, ["scanned", "paper", "images"]);
}

#[test]
fn near_misses_say_why_they_were_left_out() {
    let idx = library();
    let ranking = idx.rank(&["apps are fun"], &[], &SelectOptions::default(), None);
    assert!(ranking.selected.is_empty());
    let names: Vec<&str> = ranking.near.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["docker-compose", "release-notes"]);
    for near in &ranking.near {
        assert_eq!(near.why, "below the floor");
        assert!(near.evidence.score < near.evidence.floor);
    }
}

#[test]
fn the_floor_decides_whether_anything_is_sent_and_the_cut_what_comes_with_the_best() {
    let idx = index(vec![
        described("pdf-tools", "Merge, split and rotate PDF documents.", ""),
        described("pdf-forms", "Fill PDF forms and merge their documents.", ""),
    ]);
    let message = ["merge these pdf documents, rotate and split them"];
    let scores = |options: &SelectOptions| {
        idx.select(&message, &[], options)
            .into_iter()
            .map(|s| (s.name, s.evidence.score))
            .collect::<Vec<_>>()
    };
    let open = SelectOptions {
        floor: 0.0,
        cut: 0.0,
        ..Default::default()
    };
    let [(best, high), (second, low)] = &scores(&open)[..] else {
        panic!("two skills")
    };
    assert_eq!((best.as_str(), second.as_str()), ("pdf-tools", "pdf-forms"));
    let (high, low) = (*high, *low);
    assert!(high > low);
    // The best clears the floor and the second is within the cut: both are sent, though the
    // second scores under the floor.
    let between = SelectOptions {
        floor: (high + low) / 2.0,
        cut: low / high * 0.9,
        ..Default::default()
    };
    assert_eq!(scores(&between).len(), 2, "{:?}", scores(&between));
    // The best under the floor: nothing is.
    let above = SelectOptions {
        floor: high * 1.1,
        ..between.clone()
    };
    let ranking = idx.rank(&message, &[], &above, None);
    assert!(ranking.selected.is_empty());
    assert!(ranking.near.iter().all(|n| n.why == "below the floor"));
    assert_eq!(ranking.near.len(), 2);
}

#[test]
fn a_body_adds_evidence_but_never_selects_alone() {
    let with_body = |name, description, body| described_with(name, description, "", body);
    let idx = index(vec![
        with_body(
            "frontend-security",
            "Secure the browser side of a web app.",
            "Escape output against XSS. Never assign user text to innerHTML; sanitize it first.\n\
             XSS hides in attributes too: innerHTML is not the only sink.",
        ),
        with_body(
            "sql-helper",
            "Write and tune SQL queries.",
            "Sort rows in SQL, not in Python: a Python sort of a list of rows reads them all.\n\
             Sort with an index; list only the columns you need; Python lists of rows are slow.",
        ),
        described("css-layout", "Lay out pages with CSS grid and flexbox.", ""),
    ]);
    // Only the body names XSS and innerHTML; with the description's "web app" they select it.
    let message = "how do I stop XSS from innerHTML in our web app";
    assert_eq!(pick(&idx, message), ["frontend-security"]);
    let sel = idx.select(&[message], &[], &SelectOptions::default());
    assert_eq!(sel[0].evidence.description_words, ["web", "app"]);
    assert_eq!(sel[0].evidence.body_words, ["xss", "inner", "html"]);
    // The body's words alone select nothing, whatever they score, and the near miss says why.
    let ranking = idx.rank(&["sort this python list"], &[], &SelectOptions::default(), None);
    assert!(ranking.selected.is_empty(), "{ranking:?}");
    assert_eq!(ranking.near[0].name, "sql-helper");
    assert!(
        ranking.near[0].evidence.score >= ranking.near[0].evidence.floor,
        "{ranking:?}"
    );
    assert_eq!(ranking.near[0].why, "only its body's words");
}
