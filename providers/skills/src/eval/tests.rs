//! The scores and the two sets' parsers, on small hand-made inputs.

use std::collections::HashMap;

use super::*;
use crate::skill::Skill;

fn outcome(kind: &str, expect: &[&str], selected: &[&str]) -> Outcome {
    Outcome {
        kind: kind.into(),
        query: String::new(),
        expect: expect.iter().map(|s| s.to_string()).collect(),
        selected: selected.iter().map(|s| s.to_string()).collect(),
        micros: 1.0,
    }
}

#[test]
fn hit_recall_and_precision_count_every_skill_sent_and_silence_as_a_miss() {
    let outcomes = [
        // Right first, one extra sent.
        outcome("p", &["a"], &["a", "b"]),
        // Right third: a recall, not a hit.
        outcome("p", &["c", "d"], &["x", "y", "d"]),
        // Right fourth: neither.
        outcome("p", &["e"], &["x", "y", "z", "e"]),
        // Nothing selected: a miss.
        outcome("p", &["f"], &[]),
        // Names compare without case, as the index holds them.
        outcome("p", &["calculate_BMI"], &["calculate_bmi"]),
    ];
    let g = score("p", outcomes.iter());
    assert_eq!((g.queries, g.answered), (5, 5));
    assert_eq!(g.hit_at_1, Some(0.4));
    assert_eq!(g.recall_at_3, Some(0.6));
    // 4 expected among 10 sent.
    assert_eq!(g.precision, Some(0.4));
    assert_eq!(g.no_match, 0.2);
    assert_eq!(g.selected_per_query, 2.0);
}

#[test]
fn requests_without_an_answer_count_only_for_silence() {
    let outcomes = [
        outcome("chitchat", &[], &[]),
        outcome("chitchat", &[], &["a"]),
        outcome("chitchat", &[], &[]),
        outcome("chitchat", &[], &[]),
    ];
    let g = score("chitchat", outcomes.iter());
    assert_eq!((g.hit_at_1, g.recall_at_3, g.precision), (None, None, None));
    assert_eq!(g.no_match, 0.75);
    // Nothing selected at all: precision is unknown, not 0.
    assert_eq!(score("p", [outcome("p", &["a"], &[])].iter()).precision, None);
}

#[test]
fn groups_follow_the_kinds_with_totals_when_a_side_has_several() {
    let outcomes = [
        outcome("multiple", &["a"], &["a"]),
        outcome("irrelevance", &[], &["a"]),
        outcome("live_multiple", &["b"], &["c"]),
        outcome("live_irrelevance", &[], &[]),
    ];
    let g = groups(&outcomes);
    let kinds: Vec<&str> = g.iter().map(|g| g.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "multiple",
            "irrelevance",
            "live_multiple",
            "live_irrelevance",
            "all with an answer",
            "all without"
        ]
    );
    assert_eq!(g[4].hit_at_1, Some(0.5));
    assert_eq!(g[5].no_match, 0.5);
    // One kind on a side: no total for it.
    let one = groups(&outcomes[..2]);
    assert_eq!(one.len(), 2);
}

#[test]
fn the_embedded_corpus_set_parses_with_its_four_kinds() {
    let set = RoutingSet::embedded();
    let count = |k: &str| set.queries.iter().filter(|q| q.kind == k).count();
    assert_eq!(
        [
            count("positive"),
            count("chitchat"),
            count("everyday"),
            count("offtopic-coding")
        ],
        [210, 32, 48, 32]
    );
    assert!(set
        .queries
        .iter()
        .all(|q| (q.kind == "positive") != q.expect.is_empty()));
}

#[test]
fn a_corpus_set_line_must_have_the_three_fields_and_a_request() {
    let ok = r#"{"query": "deploy to Cloud Run", "expect": ["gcp-cloud-run"], "kind": "positive"}

{"query": "hi", "expect": [], "kind": "chitchat"}"#;
    let set = RoutingSet::parse(ok, "set.jsonl").unwrap();
    assert_eq!(set.queries.len(), 2);
    assert_eq!(set.queries[0].expect, ["gcp-cloud-run"]);
    let missing = RoutingSet::parse(r#"{"query": "hi", "kind": "chitchat"}"#, "set.jsonl").unwrap_err();
    assert!(missing.to_string().starts_with("set.jsonl line 1:"), "{missing}");
    let extra = r#"{"query": "hi", "expect": [], "kind": "chitchat", "note": 1}"#;
    assert!(RoutingSet::parse(extra, "set.jsonl").is_err());
    let empty = RoutingSet::parse(r#"{"query": " ", "expect": [], "kind": "chitchat"}"#, "set.jsonl");
    assert!(empty.unwrap_err().to_string().contains("empty"));
}

/// A tiny BFCL folder: `multiple` and `live_multiple` share `get_weather` with two descriptions.
fn bfcl_files() -> HashMap<&'static str, String> {
    let f = |name: &str, description: &str| serde_json::json!({"name": name, "description": description, "parameters": {"type": "dict", "properties": {}}});
    let entry = |id: &str, turn: serde_json::Value, functions: Vec<serde_json::Value>| {
        serde_json::json!({"id": id, "question": [turn], "function": functions}).to_string()
    };
    let user = |text: &str| serde_json::json!([{"role": "user", "content": text}]);
    let answer = |id: &str, name: &str| {
        serde_json::json!({"id": id, "ground_truth": [{name: {"city": ["Paris"]}}]}).to_string()
    };
    HashMap::from([
        (
            "BFCL_v4_multiple.json",
            [
                entry(
                    "multiple_0",
                    user("weather in Paris?"),
                    vec![
                        f("get_weather", "Current weather of a city."),
                        f("triangle.area", "Area of a triangle."),
                    ],
                ),
                entry(
                    "multiple_1",
                    user("area of a 3-4-5 triangle"),
                    vec![f("triangle.area", "Area (second wording).")],
                ),
            ]
            .join("\n"),
        ),
        (
            "possible_answer/BFCL_v4_multiple.json",
            [
                answer("multiple_0", "get_weather"),
                answer("multiple_1", "triangle.area"),
            ]
            .join("\n"),
        ),
        (
            "BFCL_v4_live_multiple.json",
            entry(
                "live_multiple_0-0-0",
                serde_json::json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "is it raining in Oslo"}]),
                vec![
                    f("get_weather", "Tells the weather."),
                    f("Uber.ride", "Tìm thời tiết \"quoted\"\nnext line"),
                ],
            ),
        ),
        (
            "possible_answer/BFCL_v4_live_multiple.json",
            answer("live_multiple_0-0-0", "get_weather"),
        ),
        (
            "BFCL_v4_irrelevance.json",
            entry(
                "irrelevance_0",
                user("tell me a joke"),
                vec![f("not.pooled", "Never pooled.")],
            ),
        ),
        (
            "BFCL_v4_live_irrelevance.json",
            entry(
                "live_irrelevance_0-0-0",
                serde_json::json!([{"role": "user", "content": "first"}, {"role": "assistant", "content": "?"}, {"role": "user", "content": "second"}]),
                vec![],
            ),
        ),
    ])
}

fn parse_bfcl(files: &HashMap<&'static str, String>) -> Result<Bfcl, EvalError> {
    Bfcl::parse(|path| {
        files
            .get(path)
            .cloned()
            .ok_or_else(|| EvalError(format!("no {path}")))
    })
}

#[test]
fn bfcl_pools_one_skill_per_name_with_its_first_description() {
    let bfcl = parse_bfcl(&bfcl_files()).unwrap();
    let pool: Vec<(&str, &str)> = bfcl
        .pool
        .iter()
        .map(|f| (f.name.as_str(), f.description.as_str()))
        .collect();
    assert_eq!(
        pool,
        [
            ("get_weather", "Current weather of a city."),
            ("triangle.area", "Area of a triangle."),
            ("Uber.ride", "Tìm thời tiết \"quoted\"\nnext line"),
        ]
    );
    let index = bfcl.index();
    assert_eq!(index.len(), 3);
    let uber = index.get("Uber.ride").unwrap();
    assert_eq!((uber.name.as_str(), uber.description.as_str()), pool[2]);
}

#[test]
fn bfcl_requests_are_the_last_user_message_and_irrelevance_expects_nothing() {
    let bfcl = parse_bfcl(&bfcl_files()).unwrap();
    let got: Vec<(&str, &str, Vec<String>)> = bfcl
        .queries
        .iter()
        .map(|q| (q.kind.as_str(), q.query.as_str(), q.expect.clone()))
        .collect();
    assert_eq!(
        got,
        [
            ("multiple", "weather in Paris?", vec!["get_weather".to_string()]),
            (
                "multiple",
                "area of a 3-4-5 triangle",
                vec!["triangle.area".to_string()]
            ),
            (
                "live_multiple",
                "is it raining in Oslo",
                vec!["get_weather".to_string()]
            ),
            ("irrelevance", "tell me a joke", vec![]),
            ("live_irrelevance", "second", vec![]),
        ]
    );
}

#[test]
fn bfcl_answers_must_match_their_entries() {
    let mut files = bfcl_files();
    let answers = "possible_answer/BFCL_v4_multiple.json";
    let swapped = files[answers].lines().rev().collect::<Vec<_>>().join("\n");
    files.insert(answers, swapped);
    let err = parse_bfcl(&files).unwrap_err().to_string();
    assert!(
        err.contains("answer `multiple_1` stands where entry `multiple_0`"),
        "{err}"
    );

    let mut files = bfcl_files();
    let one = files[answers].lines().next().unwrap().to_string();
    files.insert(answers, one);
    assert!(parse_bfcl(&files)
        .unwrap_err()
        .to_string()
        .contains("1 answers for 2 entries"));

    let mut files = bfcl_files();
    files.insert(
        answers,
        [
            r#"{"id": "multiple_0", "ground_truth": [{"elsewhere": {}}]}"#,
            r#"{"id": "multiple_1", "ground_truth": []}"#,
        ]
        .join("\n"),
    );
    let err = parse_bfcl(&files).unwrap_err().to_string();
    assert!(
        err.contains("calls `elsewhere`, which its entry does not offer"),
        "{err}"
    );

    let mut files = bfcl_files();
    files.remove("BFCL_v4_irrelevance.json");
    assert_eq!(
        parse_bfcl(&files).unwrap_err().to_string(),
        "no BFCL_v4_irrelevance.json"
    );
}

#[test]
fn run_scores_what_the_provider_selects() {
    let text = |name: &str, trigger: &str| {
        format!("---\nname: {name}\ndescription: d\ntriggers: [{trigger}]\n---\nBody.")
    };
    let skills = [("greet", "bonjour"), ("pdf", "pdf")]
        .iter()
        .map(|(n, t)| {
            let path = format!("skills/{n}/SKILL.md");
            Skill::parse(path.as_ref(), &text(n, t), Some(n)).0.unwrap()
        })
        .collect();
    let library = Arc::new(crate::SkillLibrary::from_index(SkillIndex::build(
        skills,
        Vec::new(),
    )));
    let provider = SkillContextProvider::new(library.clone(), crate::SkillConfig::default());
    let set = RoutingSet::parse(
        r#"{"query": "say bonjour", "expect": ["greet"], "kind": "positive"}
{"query": "merge two pdf files", "expect": ["pdf"], "kind": "positive"}
{"query": "hello there", "expect": ["greet"], "kind": "positive"}
{"query": "what is 2+2", "expect": [], "kind": "chitchat"}"#,
        "set",
    )
    .unwrap();
    let report = run(&provider, &library.snapshot(), &set.queries);
    assert_eq!(report.skills, 2);
    assert_eq!(report.outcomes[0].selected, ["greet"]);
    assert_eq!(report.groups[0].hit_at_1, Some(2.0 / 3.0));
    assert_eq!(report.groups[0].precision, Some(1.0));
    assert_eq!(report.groups[1].no_match, 1.0);
}
