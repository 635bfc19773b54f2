//! Secrets are never stored: a curated rule set checked on every write path (the store's own
//! writes, so the API, the CLI, explicit commands and extraction all pass through it).
//!
//! A refusal names the rule and what it looks for, never the text that matched. Values that
//! only point at a secret (`password=$DB_PASSWORD`, `token=<your token>`, `secret=***`) are
//! not secrets and pass.
//!
//! ```
//! use ctxkit_memory::secrets::{find_secret, redact};
//! let found = find_secret("deploy with AKIAIOSFODNN7EXAMPLE").unwrap();
//! assert_eq!(found.rule, "aws-access-key-id");
//! assert_eq!(redact("key AKIAIOSFODNN7EXAMPLE here"), "key [REDACTED:aws-access-key-id] here");
//! assert!(find_secret("the password lives in $DB_PASSWORD").is_none());
//! ```

use std::sync::OnceLock;

use regex::{Regex, RegexSet};

/// One rule: a name, what it finds, a pattern, and whether the pattern's `value` group must
/// hold a literal value (rather than a reference like `$VAR` or `<placeholder>`).
struct Rule {
    name: &'static str,
    description: &'static str,
    pattern: &'static str,
    literal_value: bool,
}

const RULES: &[Rule] = &[
    Rule {
        name: "pem-private-key",
        description: "a PEM private key",
        pattern: r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
        literal_value: false,
    },
    Rule {
        name: "aws-access-key-id",
        description: "an AWS access key id",
        pattern: r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b",
        literal_value: false,
    },
    Rule {
        name: "aws-secret-access-key",
        description: "an AWS secret access key",
        pattern: r#"(?i)\baws_?secret(?:_?access)?_?key\b["']?\s*[:=]\s*["']?(?P<value>[A-Za-z0-9/+=]{40})\b"#,
        literal_value: true,
    },
    Rule {
        name: "github-token",
        description: "a GitHub token",
        pattern: r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b",
        literal_value: false,
    },
    Rule {
        name: "github-fine-grained-token",
        description: "a GitHub fine-grained personal access token",
        pattern: r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b",
        literal_value: false,
    },
    Rule {
        name: "gitlab-token",
        description: "a GitLab token",
        pattern: r"\bgl(?:pat|dt|ptt|rt|cbt|oas|soat|ffct)-[A-Za-z0-9_\-]{20,}\b",
        literal_value: false,
    },
    Rule {
        name: "slack-token",
        description: "a Slack token",
        pattern: r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b",
        literal_value: false,
    },
    Rule {
        name: "slack-webhook",
        description: "a Slack webhook URL",
        pattern: r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]{20,}",
        literal_value: false,
    },
    Rule {
        name: "stripe-key",
        description: "a Stripe API key",
        pattern: r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b",
        literal_value: false,
    },
    Rule {
        name: "anthropic-api-key",
        description: "an Anthropic API key",
        pattern: r"\bsk-ant-(?:api|admin|oat)\d{2}-[A-Za-z0-9_\-]{20,}",
        literal_value: false,
    },
    Rule {
        name: "openai-api-key",
        description: "an OpenAI API key",
        pattern: r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}",
        literal_value: false,
    },
    Rule {
        name: "google-api-key",
        description: "a Google API key",
        pattern: r"\bAIza[0-9A-Za-z_\-]{35}\b",
        literal_value: false,
    },
    Rule {
        name: "huggingface-token",
        description: "a Hugging Face token",
        pattern: r"\bhf_[A-Za-z0-9]{34,}\b",
        literal_value: false,
    },
    Rule {
        name: "npm-token",
        description: "an npm access token",
        pattern: r"\bnpm_[A-Za-z0-9]{36}\b",
        literal_value: false,
    },
    Rule {
        name: "pypi-token",
        description: "a PyPI upload token",
        pattern: r"\bpypi-AgE[A-Za-z0-9_\-]{50,}",
        literal_value: false,
    },
    Rule {
        name: "sendgrid-api-key",
        description: "a SendGrid API key",
        pattern: r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}\b",
        literal_value: false,
    },
    Rule {
        name: "jwt",
        description: "a JSON Web Token",
        pattern: r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        literal_value: false,
    },
    Rule {
        name: "url-credentials",
        description: "a URL with a password in it",
        pattern: r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]+:(?P<value>[^/\s:@]{3,})@",
        literal_value: true,
    },
    Rule {
        name: "bearer-token",
        description: "a bearer token",
        pattern: r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9_\-.=+/]{20,})",
        literal_value: true,
    },
    Rule {
        name: "password-assignment",
        description: "a password assignment",
        pattern: r#"(?i)\b(?:[a-z0-9]+[_-])*(?:password|passwd|passphrase|pwd)\b["']?\s*(?:=|:=|=>|:)\s*["']?(?P<value>[^\s"',;]{3,})"#,
        literal_value: true,
    },
    Rule {
        name: "secret-assignment",
        description: "a secret, token or API key assignment",
        pattern: r#"(?i)\b(?:[a-z0-9]+[_-])*(?:secret|api[_-]?key|apikey|access[_-]?token|auth[_-]?token|refresh[_-]?token|private[_-]?key|client[_-]?secret|token)\b["']?\s*(?:=|:=|=>|:)\s*["']?(?P<value>[A-Za-z0-9_\-./+=]{8,})"#,
        literal_value: true,
    },
];

/// The rule a text broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SecretFinding {
    /// Short rule name, e.g. `github-token`.
    pub rule: &'static str,
    /// What the rule finds, e.g. "a GitHub token".
    pub description: &'static str,
}

struct Compiled {
    set: RegexSet,
    each: Vec<Regex>,
}

fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let patterns: Vec<&str> = RULES.iter().map(|r| r.pattern).collect();
        Compiled {
            set: RegexSet::new(&patterns).expect("the secret rules are valid regexes"),
            each: patterns
                .iter()
                .map(|p| Regex::new(p).expect("the secret rules are valid regexes"))
                .collect(),
        }
    })
}

/// Names of every rule, in the order they are checked.
pub fn rule_names() -> Vec<&'static str> {
    RULES.iter().map(|r| r.name).collect()
}

/// Whether a matched value is a literal rather than a reference or placeholder.
fn is_literal(value: &str) -> bool {
    let first = value.chars().next().unwrap_or(' ');
    if matches!(first, '$' | '<' | '{' | '%' | '*' | '[' | '(') {
        return false;
    }
    let lower = value.to_lowercase();
    let placeholders = [
        "xxx",
        "***",
        "...",
        "redacted",
        "changeme",
        "placeholder",
        "example",
        "your_",
        "your-",
        "env.",
        "process.env",
        "os.environ",
        "getenv",
        "none",
        "null",
        "true",
        "false",
        "required",
        "optional",
        "string",
    ];
    !placeholders.iter().any(|p| lower.starts_with(p))
}

/// Every match of rule `index` in `text` that counts as a secret, as byte ranges.
fn matches_of(index: usize, text: &str) -> Vec<std::ops::Range<usize>> {
    let rule = &RULES[index];
    compiled().each[index]
        .captures_iter(text)
        .filter(|c| !rule.literal_value || c.name("value").is_some_and(|v| is_literal(v.as_str())))
        .filter_map(|c| c.get(0).map(|m| m.range()))
        .collect()
}

/// The first rule `text` breaks, if any.
pub fn find_secret(text: &str) -> Option<SecretFinding> {
    let hits = compiled().set.matches(text);
    hits.iter()
        .find(|&i| !matches_of(i, text).is_empty())
        .map(|i| SecretFinding {
            rule: RULES[i].name,
            description: RULES[i].description,
        })
}

/// Check `text`, answering with the refusal the store gives; `what` names the thing being
/// stored ("memory", "episodic record", …).
pub fn check(what: &'static str, text: &str) -> crate::Result<()> {
    match find_secret(text) {
        None => Ok(()),
        Some(f) => Err(crate::MemoryError::Secret {
            what,
            rule: f.rule,
            description: f.description,
        }),
    }
}

/// `text` with every secret replaced by `[REDACTED:rule]`.
pub fn redact(text: &str) -> String {
    let hits = compiled().set.matches(text);
    if !hits.matched_any() {
        return text.to_string();
    }
    let mut ranges: Vec<(std::ops::Range<usize>, &'static str)> = Vec::new();
    for i in hits.iter() {
        ranges.extend(matches_of(i, text).into_iter().map(|r| (r, RULES[i].name)));
    }
    ranges.sort_by_key(|(r, _)| (r.start, std::cmp::Reverse(r.end)));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (r, name) in ranges {
        if r.start < at {
            continue;
        }
        out.push_str(&text[at..r.start]);
        out.push_str(&format!("[REDACTED:{name}]"));
        at = r.end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One example per rule; built from pieces so this file does not itself look like it holds
    /// credentials.
    fn examples() -> Vec<(&'static str, String)> {
        let r = |n: usize| {
            "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7n"
                .chars()
                .cycle()
                .take(n)
                .collect::<String>()
        };
        vec![
            (
                "pem-private-key",
                format!("-----BEGIN RSA {}-----\nMII", "PRIVATE KEY"),
            ),
            (
                "pem-private-key",
                format!("-----BEGIN OPENSSH {}-----", "PRIVATE KEY"),
            ),
            ("aws-access-key-id", format!("AKIA{}", "IOSFODNN7EXAMPLE")),
            (
                "aws-secret-access-key",
                format!("aws_secret_access_key = {}", r(40)),
            ),
            ("github-token", format!("ghp_{}", r(36))),
            ("github-fine-grained-token", format!("github_pat_{}", r(40))),
            ("gitlab-token", format!("glpat-{}", r(20))),
            ("slack-token", format!("xoxb-{}-{}", "1234567890", r(24))),
            (
                "slack-webhook",
                format!("https://hooks.slack.com/services/T000/B000/{}", r(24)),
            ),
            ("stripe-key", format!("sk_live_{}", r(24))),
            ("anthropic-api-key", format!("sk-ant-api03-{}", r(40))),
            ("openai-api-key", format!("sk-proj-{}", r(40))),
            ("openai-api-key", format!("sk-{}", r(48))),
            ("google-api-key", format!("AIza{}", r(35))),
            ("huggingface-token", format!("hf_{}", r(34))),
            ("npm-token", format!("npm_{}", r(36))),
            ("pypi-token", format!("pypi-AgEIcHlwaS5vcmc{}", r(60))),
            ("sendgrid-api-key", format!("SG.{}.{}", r(22), r(43))),
            (
                "jwt",
                format!("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.{}", r(20)),
            ),
            (
                "url-credentials",
                "postgres://admin:s3cretpw@db.internal:5432/app".to_string(),
            ),
            ("bearer-token", format!("Authorization: Bearer {}", r(32))),
            ("password-assignment", "password=hunter22".to_string()),
            (
                "password-assignment",
                "DB_PASSWORD: \"correct-horse\"".to_string(),
            ),
            ("secret-assignment", format!("secret={}", r(16))),
            ("secret-assignment", format!("OPENAI_API_KEY={}", r(16))),
            ("secret-assignment", format!("\"client_secret\": \"{}\"", r(16))),
        ]
    }

    #[test]
    fn there_are_enough_rules_and_each_fires() {
        assert!(RULES.len() >= 15, "{} rules", RULES.len());
        let mut fired: Vec<&str> = Vec::new();
        for (rule, text) in examples() {
            let line = format!("remember that {text} is what we use");
            let found = find_secret(&line).unwrap_or_else(|| panic!("{rule} did not fire on its example"));
            assert_eq!(found.rule, rule, "wrong rule for the {rule} example");
            fired.push(rule);
            let red = redact(&line);
            assert!(red.contains(&format!("[REDACTED:{rule}]")), "{red}");
            assert!(find_secret(&red).is_none(), "redaction left a secret: {red}");
        }
        for name in rule_names() {
            assert!(fired.contains(&name), "rule {name} has no example");
        }
    }

    #[test]
    fn ordinary_text_passes() {
        for text in [
            "Always use pnpm, not npm",
            "The password lives in $DB_PASSWORD; never commit it",
            "token = <your token>",
            "password: ******** (see the vault)",
            "api_key=${API_KEY}",
            "Use the secret manager for credentials",
            "the sk-learn library and task-specific tokens",
            "passwords are hashed with argon2",
            "git clone https://github.com/org/repo.git",
            "the tokenizer splits text into tokens",
            "JWTs are signed with HS256",
            "postgres://localhost:5432/app",
        ] {
            assert_eq!(find_secret(text), None, "false positive on {text:?}");
            assert_eq!(redact(text), text);
        }
    }

    #[test]
    fn refusal_names_the_rule_without_echoing_the_secret() {
        let secret = format!("ghp_{}", "x1".repeat(18));
        let err = check("memory", &format!("token {secret}"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("github-token") && err.contains("GitHub token"),
            "{err}"
        );
        assert!(!err.contains(&secret), "{err}");
        assert!(check("memory", "use pnpm").is_ok());
    }
}
