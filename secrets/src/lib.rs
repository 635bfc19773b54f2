#![deny(missing_docs)]
//! Secrets detection for ctxkit: a curated rule set that the memory store checks on every write
//! path (so the API, the CLI, explicit commands, imports and extraction all pass through it),
//! and that the CLI, the MCP server and the learner use to keep secrets out of what they echo,
//! log or send to a model: [`find_secret`] names the first rule a text breaks,
//! [`redact`] hides every match.
//!
//! - **Raw text first.** Every field is checked as given, before it is trimmed, lowercased or
//!   otherwise normalised (a keyword `AKIA…` is refused, not stored as `akia…`).
//! - **Then a folded copy.** Zero-width and other invisible characters are dropped and the rest
//!   folded with NFKC (full-width `ｇｈｐ＿…` reads as `ghp_…`) in a copy used for detection only;
//!   nothing stored is changed by it.
//! - **Labelled values must be literals.** Values that only point at a secret
//!   (`password=$DB_PASSWORD`, `token=<your token>`, `secret=***`,
//!   `password: "see the vault"`), code that names or computes one (`apiKey: config.apiKey`,
//!   `password: hashPassword(raw)`) and values labelled public (a fingerprint) are not secrets
//!   and pass. Values found only by their context (an AWS secret key next to "aws", "my
//!   password is …") must also look like one. A quote may be JSON-escaped (`\"`).
//! - **A vendor prefix is enough.** A token with a distinctive prefix fires glued to the word
//!   before it and with a longer tail than the vendor documents; the whole tail is redacted.
//!
//! A refusal names the rule and what it looks for, never the text that matched. Each rule
//! carries keywords, strings one of which every match of its pattern holds (as gitleaks' rules
//! do, but derived from the pattern and checked by a test rather than written by hand). One
//! Aho-Corasick pass finds the rules whose keywords a text holds (two passes when folding
//! changed it), and only those rules' patterns run, each compiled the first time it is needed:
//! a check costs time linear in the text (at most one pass per rule), and a process that reads
//! ordinary text compiles a few rules instead of all of them (about 10 ms).
//!
//! Cost (`cargo bench -p ctxkit-secrets --bench secrets`, one core of a shared 2-core machine):
//! `find_secret` on an ordinary 65-byte field takes about 1.1 µs; on 280 KB of long near
//! misses (`password ` and `aws ` repeated, then 100,000 `A`s) `find_secret` and `redact` each
//! take about 9 ms, linear in the text.
//!
//! ```
//! use ctxkit_secrets::{find_secret, redact};
//! let found = find_secret("deploy with AKIAIOSFODNN7EXAMPLE").unwrap();
//! assert_eq!(found.rule, "aws-access-key-id");
//! assert_eq!(redact("key AKIAIOSFODNN7EXAMPLE here"), "key [REDACTED:aws-access-key-id] here");
//! assert!(find_secret("the password lives in $DB_PASSWORD").is_none());
//! // Zero-width characters do not hide a key.
//! assert_eq!(find_secret("AKIA\u{200b}IOSFODNN7EXAMPLE").unwrap().rule, "aws-access-key-id");
//! ```

use std::ops::Range;
use std::sync::OnceLock;

use aho_corasick::AhoCorasick;
use regex::Regex;
use unicode_normalization::UnicodeNormalization;

/// What a rule's `value` group must look like for a match to count.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Value {
    /// Any match counts.
    Any,
    /// The value must be a literal, not a reference like `$VAR`, `<placeholder>` or "see the vault".
    Literal,
    /// A literal that also looks machine-made: upper case, lower case and digits.
    Random,
    /// A literal that does not read like a word: it holds a digit, a symbol or an inner capital.
    Password,
    /// A literal that looks machine-made: letters and digits, no spaces.
    Token,
    /// Base64 that decodes to the start of a PEM private key.
    Base64PrivateKey,
    /// Twelve or more words in a row from the BIP39 word list.
    SeedPhrase,
}

/// One rule: a name, what it finds, a pattern, and what its `value` group must hold.
struct Rule {
    name: &'static str,
    description: &'static str,
    pattern: &'static str,
    /// Strings one of which every match holds, compared ASCII case-insensitively (in the text
    /// or its folded copy): a text holding none skips the rule without running its pattern.
    /// Derived from the pattern; a test checks they still are.
    keywords: &'static [&'static str],
    value: Value,
    /// The pattern starts with a vendor's distinctive prefix, so it also fires glued to the
    /// word before it (`xghp_…`, `Preghp_…`): its leading `\b` is dropped when compiled.
    glued: bool,
}

const fn rule(
    name: &'static str,
    description: &'static str,
    pattern: &'static str,
    keywords: &'static [&'static str],
) -> Rule {
    Rule {
        name,
        description,
        pattern,
        keywords,
        value: Value::Any,
        glued: false,
    }
}

/// A vendor token with a distinctive prefix: fires anywhere, even glued to a word.
const fn token(
    name: &'static str,
    description: &'static str,
    pattern: &'static str,
    keywords: &'static [&'static str],
) -> Rule {
    Rule {
        glued: true,
        ..rule(name, description, pattern, keywords)
    }
}

const fn valued(
    name: &'static str,
    description: &'static str,
    pattern: &'static str,
    keywords: &'static [&'static str],
    value: Value,
) -> Rule {
    Rule {
        value,
        ..rule(name, description, pattern, keywords)
    }
}

/// The rules, most specific first (the first rule that fires names the refusal). `\b` is an
/// ASCII word boundary (see [`compiled`]). Values in labelled rules stop at quotes, spaces and
/// separators.
const RULES: &[Rule] = &[
    // ----- private keys ---------------------------------------------------------------
    rule(
        "pem-private-key",
        "a PEM private key",
        // The whole block up to its END line (or the end of the text), so redaction removes the
        // key body too.
        // Four dashes and spaces are SSH2's form (`---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----`).
        r"-----? ?BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-----?(?s:.*?)(?:-----? ?END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)? ?-----?|\z)",
        &["----"],
    ),
    token(
        "age-secret-key",
        "an age secret key",
        r"\bAGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}\b",
        &["age-secret-key-1"],
    ),
    valued(
        "base64-private-key",
        "a base64-encoded PEM private key",
        // `-----BEGIN` in base64 (`client-key-data:` of a kubeconfig, a key in a variable),
        // decoded to check it is a private key and not a certificate.
        r"(?P<value>LS0tLS1CRUdJTi[A-Za-z0-9+/]{20,}={0,2})",
        &["ls0tls1crudjti"],
        Value::Base64PrivateKey,
    ),
    valued(
        "seed-phrase",
        "a BIP39 wallet seed phrase",
        // Twelve or more words in a row (on a line or one per line), each from the BIP39 word
        // list (see `holds_seed_phrase`).
        r"\b[a-z]{3,8}(?:\s+[a-z]{3,8}){11,}\b",
        &["\t", "\n", "\u{b}", "\u{c}", "\r", " "],
        Value::SeedPhrase,
    ),
    rule(
        "putty-private-key",
        "a PuTTY private key file",
        r"PuTTY-User-Key-File-[23]:",
        &["putty-user-key-file-2:", "putty-user-key-file-3:"],
    ),
    // ----- cloud providers --------------------------------------------------------------
    token(
        "aws-access-key-id",
        "an AWS access key id",
        r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|A3T[A-Z0-9])[0-9A-Z]{16}\b",
        &[
            "a3t", "abia", "acca", "agpa", "aida", "aipa", "akia", "anpa", "anva", "aroa", "asia",
        ],
    ),
    valued(
        "aws-secret-access-key",
        "an AWS secret access key",
        r#"(?i)\baws_?secret(?:_?access)?_?key\b["']?\s*(?:=|:=|=>|:)\s*["']?(?P<value>[A-Za-z0-9/+=]{40})\b"#,
        &["secret"],
        Value::Literal,
    ),
    valued(
        "aws-secret-key-in-context",
        "an AWS secret access key",
        r#"(?i)\baws[A-Za-z0-9_.\- "':=]{0,24}?(?-i)(?:[^A-Za-z0-9/+])(?P<value>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
        &["aws"],
        Value::Random,
    ),
    rule(
        "aws-mws-key",
        "an Amazon MWS key",
        r"\bamzn\.mws\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
        &["amzn.mws."],
    ),
    valued(
        "azure-storage-account-key",
        "an Azure storage account key",
        r"(?i)\bAccountKey\s*=\s*(?P<value>[A-Za-z0-9+/]{80,100}={0,2})",
        &["accountkey"],
        Value::Literal,
    ),
    valued(
        "azure-sas-token",
        "an Azure shared access signature",
        r"(?i)(?:^|[?&\s;])sig=(?P<value>[A-Za-z0-9%+/]{30,}={0,2})",
        &["sig="],
        Value::Literal,
    ),
    valued(
        "azure-shared-access-key",
        "an Azure Service Bus or Event Hubs shared access key",
        r"(?i)\bSharedAccessKey\s*=\s*(?P<value>[A-Za-z0-9+/]{30,}={0,2})",
        &["sharedaccesskey"],
        Value::Literal,
    ),
    rule(
        "azure-ad-client-secret",
        "an Azure AD client secret",
        r"(?:^|[^A-Za-z0-9_~.\-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?:[^A-Za-z0-9_~.\-]|$)",
        &["q~"],
    ),
    token(
        "google-api-key",
        "a Google API key",
        r"\bAIza[0-9A-Za-z_\-]{35}\b",
        &["aiza"],
    ),
    token(
        "google-oauth-client-secret",
        "a Google OAuth client secret",
        r"\bGOCSPX-[A-Za-z0-9_\-]{28}\b",
        &["gocspx-"],
    ),
    token(
        "google-oauth-token",
        "a Google OAuth access token",
        r"\bya29\.[A-Za-z0-9_\-]{30,}",
        &["ya29."],
    ),
    token(
        "alibaba-access-key-id",
        "an Alibaba Cloud access key id",
        r"\bLTAI[A-Za-z0-9]{20}\b",
        &["ltai"],
    ),
    token(
        "digitalocean-token",
        "a DigitalOcean token",
        r"\bdo[opr]_v1_[a-f0-9]{64}\b",
        &["doo_v1_", "dop_v1_", "dor_v1_"],
    ),
    token(
        "heroku-api-key",
        "a Heroku API key",
        r"\bHRKU-[A-Za-z0-9_\-]{58,62}\b",
        &["hrku-"],
    ),
    token(
        "hashicorp-vault-token",
        "a HashiCorp Vault token",
        r"\bhv[sbr]\.[A-Za-z0-9_\-]{24,}",
        &["hvb.", "hvr.", "hvs."],
    ),
    rule(
        "terraform-cloud-token",
        "a Terraform Cloud API token",
        r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,}",
        &[".atlasv1."],
    ),
    token(
        "pulumi-token",
        "a Pulumi access token",
        r"\bpul-[a-f0-9]{40}\b",
        &["pul-"],
    ),
    token(
        "doppler-token",
        "a Doppler token",
        // Service tokens carry their environment: `dp.st.dev.…`, `dp.st.prd_eu.…`.
        r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.(?:[A-Za-z0-9_\-]{1,40}\.)?[A-Za-z0-9]{40,44}\b",
        &["dp.audit.", "dp.ct.", "dp.pt.", "dp.sa.", "dp.scim.", "dp.st."],
    ),
    token(
        "databricks-token",
        "a Databricks token",
        r"\bdapi[a-f0-9]{32}(?:-\d)?\b",
        &["dapi"],
    ),
    token(
        "supabase-token",
        "a Supabase access token",
        r"\bsbp_[a-f0-9]{40}\b",
        &["sbp_"],
    ),
    rule(
        "cloudflare-origin-ca-key",
        "a Cloudflare origin CA key",
        r"\bv1\.0-[a-f0-9]{24}-[a-f0-9]{146}\b",
        &["v1.0-"],
    ),
    token(
        "supabase-secret-key",
        "a Supabase secret API key",
        r"\bsb_secret_[A-Za-z0-9_\-]{20,}",
        &["sb_secret_"],
    ),
    token(
        "fly-io-token",
        "a Fly.io access token",
        r"\b(?:FlyV1\s+)?(?:fm[12][ar]?|fo1)_[A-Za-z0-9+/=_\-]{40,}",
        &["fm1", "fm2", "fo1"],
    ),
    token(
        "tailscale-key",
        "a Tailscale auth, API or OAuth key",
        r"\btskey-[a-z]+-[A-Za-z0-9]{4,}-[A-Za-z0-9]{16,}\b",
        &["tskey-"],
    ),
    token(
        "dynatrace-token",
        "a Dynatrace API token",
        r"\bdt0[a-z]\d{2}\.[A-Z0-9]{24}\.[A-Z0-9]{64}\b",
        &["dt0"],
    ),
    token(
        "yandex-cloud-key",
        "a Yandex Cloud API key or IAM token",
        r"\b(?:AQVN[A-Za-z0-9_\-]{35,38}|t1\.[A-Za-z0-9_\-]+={0,2}\.[A-Za-z0-9_\-]{86}={0,2})",
        &["aqvn", "t1."],
    ),
    token(
        "neon-api-key",
        "a Neon API key",
        r"\bnapi_[a-z0-9]{64}\b",
        &["napi_"],
    ),
    token(
        "deno-deploy-token",
        "a Deno Deploy token",
        r"\bdd[pw]_[A-Za-z0-9]{36}\b",
        &["ddp_", "ddw_"],
    ),
    token(
        "netlify-token",
        "a Netlify access token",
        r"\bnf[pc]_[A-Za-z0-9]{36,40}\b",
        &["nfc_", "nfp_"],
    ),
    // ----- code hosting and package registries ------------------------------------------
    token(
        "github-token",
        "a GitHub token",
        r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b",
        &["gho_", "ghp_", "ghr_", "ghs_", "ghu_"],
    ),
    token(
        "github-fine-grained-token",
        "a GitHub fine-grained personal access token",
        r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b",
        &["github_pat_"],
    ),
    token(
        "gitlab-token",
        "a GitLab token",
        r"\bgl(?:pat|dt|ptt|rt|cbt|oas|soat|ffct|agent|imt|ft)-[A-Za-z0-9_\-]{20,}\b",
        &[
            "glagent-", "glcbt-", "gldt-", "glffct-", "glft-", "glimt-", "gloas-", "glpat-", "glptt-",
            "glrt-", "glsoat-",
        ],
    ),
    token(
        "bitbucket-app-password",
        "a Bitbucket or Atlassian API token",
        r"\b(?:ATBB|ATATT)[A-Za-z0-9_=\-]{24,}\b",
        &["atatt", "atbb"],
    ),
    token(
        "npm-token",
        "an npm access token",
        r"\bnpm_[A-Za-z0-9]{36}\b",
        &["npm_"],
    ),
    valued(
        "npmrc-auth-token",
        "an npm registry auth token",
        r#"(?i)(?:^|[\s:/])_auth(?:Token)?\s*=\s*["']?(?P<value>[^\s"']{8,})"#,
        &["_auth"],
        Value::Literal,
    ),
    token(
        "pypi-token",
        "a PyPI upload token",
        r"\bpypi-AgE[A-Za-z0-9_\-]{50,}",
        &["pypi-age"],
    ),
    token(
        "rubygems-api-key",
        "a RubyGems API key",
        r"\brubygems_[a-f0-9]{48}\b",
        &["rubygems_"],
    ),
    rule(
        "nuget-api-key",
        "a NuGet API key",
        r"\boy2[a-z0-9]{43}\b",
        &["oy2"],
    ),
    rule(
        "clojars-token",
        "a Clojars deploy token",
        r"(?i)\bCLOJARS_[a-z0-9]{60}\b",
        &["clojars_"],
    ),
    token(
        "docker-hub-token",
        "a Docker Hub access token",
        r"\bdckr_(?:pat|oat)_[A-Za-z0-9_\-]{27,}",
        &["dckr_oat_", "dckr_pat_"],
    ),
    token(
        "postman-api-key",
        "a Postman API key",
        r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b",
        &["pmak-"],
    ),
    // ----- developer services -----------------------------------------------------------
    token(
        "linear-api-key",
        "a Linear API key",
        r"\blin_api_[A-Za-z0-9]{40}\b",
        &["lin_api_"],
    ),
    token(
        "sentry-token",
        "a Sentry auth token",
        r"\b(?:sntrys_eyJ[A-Za-z0-9_=+/\-]{50,}|sntryu_[a-f0-9]{64}\b)",
        &["sntrys_eyj", "sntryu_"],
    ),
    token(
        "grafana-token",
        "a Grafana token",
        r"\b(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b|glc_[A-Za-z0-9+/]{32,}={0,2})",
        &["glc_", "glsa_"],
    ),
    token(
        "new-relic-key",
        "a New Relic key",
        r"\bNR(?:AK|II|JS)-[A-Za-z0-9]{19,32}\b",
        &["nrak-", "nrii-", "nrjs-"],
    ),
    token(
        "planetscale-token",
        "a PlanetScale token or password",
        r"\bpscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.=\-]{32,64}",
        &["pscale_oauth_", "pscale_pw_", "pscale_tkn_"],
    ),
    token(
        "onepassword-service-token",
        "a 1Password service account token",
        r"\bops_eyJ[A-Za-z0-9+/=_\-]{100,}",
        &["ops_eyj"],
    ),
    rule(
        "airtable-token",
        "an Airtable token",
        r"\bpat[A-Za-z0-9]{14}\.[a-f0-9]{64}\b",
        &["pat"],
    ),
    rule(
        "notion-token",
        "a Notion integration token",
        r"\b(?:ntn_[0-9]{11}[A-Za-z0-9]{35}|secret_[A-Za-z0-9]{43})\b",
        &["ntn_", "secret_"],
    ),
    rule(
        "mapbox-token",
        "a Mapbox secret token",
        r"\bsk\.eyJ[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{20,}",
        &["sk.eyj"],
    ),
    rule(
        "dropbox-token",
        "a Dropbox access token",
        r"\bsl\.[A-Za-z0-9_\-]{130,}",
        &["sl."],
    ),
    token(
        "buildkite-token",
        "a Buildkite API or agent token",
        r"\bbk(?:ua|at)_[A-Za-z0-9]{40}\b",
        &["bkat_", "bkua_"],
    ),
    token(
        "sourcegraph-token",
        "a Sourcegraph access token",
        r"\bsgp_(?:[a-f0-9]{16}_|local_)?[a-f0-9]{40}\b",
        &["sgp_"],
    ),
    token(
        "figma-token",
        "a Figma personal access token",
        r"\bfigd_[A-Za-z0-9_\-]{40,}",
        &["figd_"],
    ),
    token(
        "prefect-token",
        "a Prefect API key",
        r"\bpnu_[A-Za-z0-9]{36}\b",
        &["pnu_"],
    ),
    token(
        "readme-api-key",
        "a ReadMe API key",
        r"\brdme_[a-z0-9]{70}\b",
        &["rdme_"],
    ),
    token(
        "typeform-token",
        "a Typeform personal token",
        r"\btfp_[A-Za-z0-9_\-.=]{59}",
        &["tfp_"],
    ),
    token(
        "artifactory-token",
        "a JFrog Artifactory API key or reference token",
        r"\b(?:AKCp[A-Za-z0-9]{69}|cmVmdGtu[A-Za-z0-9]{56})\b",
        &["akcp", "cmvmdgtu"],
    ),
    token(
        "infracost-api-key",
        "an Infracost API key",
        r"\bico-[A-Za-z0-9]{32}\b",
        &["ico-"],
    ),
    token(
        "onepassword-secret-key",
        "a 1Password account secret key",
        r"\bA3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}\b",
        &["a3-"],
    ),
    // ----- AI services ------------------------------------------------------------------
    token(
        "anthropic-api-key",
        "an Anthropic API key",
        // API, admin, OAuth and session keys: `sk-ant-api03-`, `sk-ant-sid01-`, ….
        r"\bsk-ant-[a-z]{2,6}\d{2}-[A-Za-z0-9_\-]{20,}",
        &["sk-ant-"],
    ),
    valued(
        "openai-api-key",
        "an OpenAI API key",
        r"\bsk-(?:(?:proj|svcacct|admin|None)-(?P<value>[A-Za-z0-9_\-]{20,})|(?P<legacy>[A-Za-z0-9]{32,}))\b",
        &["sk-"],
        Value::Random,
    ),
    token(
        "huggingface-token",
        "a Hugging Face token",
        r"\bhf_[A-Za-z0-9]{34,}\b",
        &["hf_"],
    ),
    token(
        "groq-api-key",
        "a Groq API key",
        r"\bgsk_[A-Za-z0-9]{48,56}\b",
        &["gsk_"],
    ),
    token(
        "replicate-token",
        "a Replicate API token",
        r"\br8_[A-Za-z0-9]{37}\b",
        &["r8_"],
    ),
    token(
        "perplexity-api-key",
        "a Perplexity API key",
        r"\bpplx-[A-Za-z0-9]{48}\b",
        &["pplx-"],
    ),
    token(
        "sk-vendor-api-key",
        "an API key of the sk-VENDOR-vN- family (OpenRouter and others)",
        r"\bsk-[a-z]{2,8}-v\d{1,2}-[A-Za-z0-9]{32,}\b",
        &["sk-"],
    ),
    token(
        "sk-hex-api-key",
        "an API key of the sk-HEX family (DeepSeek and others)",
        r"\bsk-[a-f0-9]{32,64}\b",
        &["sk-"],
    ),
    token(
        "langfuse-secret-key",
        "a Langfuse secret key",
        r"\bsk-lf-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}\b",
        &["sk-lf-"],
    ),
    token(
        "xai-api-key",
        "an xAI API key",
        r"\bxai-[A-Za-z0-9]{60,100}\b",
        &["xai-"],
    ),
    token(
        "pinecone-api-key",
        "a Pinecone API key",
        r"\bpcsk_[A-Za-z0-9_]{40,}",
        &["pcsk_"],
    ),
    token(
        "langsmith-api-key",
        "a LangSmith API key",
        r"\blsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}\b",
        &["lsv2_pt_", "lsv2_sk_"],
    ),
    token(
        "fireworks-api-key",
        "a Fireworks AI API key",
        r"\bfw_[A-Za-z0-9]{24,}\b",
        &["fw_"],
    ),
    // ----- messaging, payments, e-mail --------------------------------------------------
    token(
        "slack-token",
        "a Slack token",
        // Bot, user, app, refresh, legacy and the browser's `xoxc-` token with its URL-encoded
        // `xoxd-` cookie.
        r"\bxox[abcdeoprs]-[A-Za-z0-9%-]{10,}",
        &["xox"],
    ),
    rule(
        "slack-app-token",
        "a Slack app-level token",
        r"(?i)\bxapp-\d-[a-z0-9]+-\d+-[a-z0-9]{10,}\b",
        &["xapp-"],
    ),
    rule(
        "slack-webhook",
        "a Slack webhook URL",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,}",
        &[
            "https://hooks.slack.com/services/",
            "https://hooks.slack.com/triggers/",
            "https://hooks.slack.com/workflows/",
        ],
    ),
    rule(
        "discord-webhook",
        "a Discord webhook URL",
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{60,}",
        &[".com/api/webhooks/"],
    ),
    rule(
        "discord-bot-token",
        "a Discord bot token",
        r"\b[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}\b",
        &["."],
    ),
    rule(
        "telegram-bot-token",
        "a Telegram bot token",
        r"\b\d{8,10}:AA[A-Za-z0-9_\-]{33}\b",
        &[":aa"],
    ),
    rule(
        "twilio-key",
        "a Twilio API key or account SID",
        r"\b(?:SK|AC)[0-9a-fA-F]{32}\b",
        &["ac", "sk"],
    ),
    rule(
        "sendgrid-api-key",
        "a SendGrid API key",
        r"\bSG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}\b",
        &["sg."],
    ),
    rule(
        "mailgun-api-key",
        "a Mailgun API key",
        r"\bkey-[0-9a-f]{32}\b",
        &["key-"],
    ),
    rule(
        "mailchimp-api-key",
        "a Mailchimp API key",
        r"\b[0-9a-f]{32}-us\d{1,2}\b",
        &["-us"],
    ),
    token(
        "stripe-key",
        "a Stripe API key",
        r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b",
        &[
            "pk_live_", "pk_test_", "rk_live_", "rk_test_", "sk_live_", "sk_test_",
        ],
    ),
    token(
        "stripe-webhook-secret",
        "a Stripe webhook signing secret",
        r"\bwhsec_[A-Za-z0-9]{32,}\b",
        &["whsec_"],
    ),
    rule(
        "square-token",
        "a Square access token",
        r"\b(?:EAAA[A-Za-z0-9_\-]{60}|sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,43})\b",
        &["eaaa", "sq0atp-", "sq0csp-"],
    ),
    token(
        "shopify-token",
        "a Shopify access token",
        r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b",
        &["shpat_", "shpca_", "shppa_", "shpss_"],
    ),
    rule(
        "facebook-access-token",
        "a Facebook access token",
        r"\bEAA[BCDM][A-Za-z0-9]{80,}",
        &["eaab", "eaac", "eaad", "eaam"],
    ),
    rule(
        "twitter-bearer-token",
        "a Twitter (X) bearer token",
        r"\bA{22}[A-Za-z0-9%]{30,}",
        &["aaaaaaaaaaaaaaaaaaaaaa"],
    ),
    token(
        "firebase-cloud-messaging-key",
        "a Firebase Cloud Messaging server key",
        r"\bAAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{100,}",
        &[":apa91b"],
    ),
    token(
        "resend-api-key",
        "a Resend API key",
        r"\bre_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}\b",
        &["re_"],
    ),
    token(
        "easypost-api-key",
        "an EasyPost API key",
        r"\bEZ[AT]K[A-Za-z0-9]{54}\b",
        &["ezak", "eztk"],
    ),
    token(
        "flutterwave-key",
        "a Flutterwave secret or encryption key",
        r"\bFLW(?:SECK|PUBK)(?:_TEST)?-[a-h0-9]{32}-X\b",
        &["flwpubk", "flwseck"],
    ),
    token(
        "shippo-token",
        "a Shippo API token",
        r"\bshippo_(?:live|test)_[a-f0-9]{40}\b",
        &["shippo_live_", "shippo_test_"],
    ),
    // ----- more vendor prefixes, from gitleaks' rule list, family by family ---------------
    token(
        "gitlab-runner-registration-token",
        "a GitLab runner registration token",
        r"\bGR1348941[A-Za-z0-9_\-]{20,}",
        &["gr1348941"],
    ),
    rule(
        "gitlab-session-cookie",
        "a GitLab session cookie",
        r"\b_gitlab_session=[0-9a-z]{32}",
        &["_gitlab_session="],
    ),
    token(
        "brevo-api-key",
        "a Brevo (Sendinblue) API or SMTP key",
        r"\bx(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}",
        &["xkeysib-", "xsmtpsib-"],
    ),
    token(
        "contentful-token",
        "a Contentful personal access token",
        r"\bCFPAT-[A-Za-z0-9_\-]{43}",
        &["cfpat-"],
    ),
    token(
        "sonarqube-token",
        "a SonarQube token",
        r"\bsq[upa]_[a-f0-9]{40}",
        &["sqa_", "sqp_", "squ_"],
    ),
    token(
        "circleci-token",
        "a CircleCI personal or project token",
        r"\bCCI(?:PAT|PRJ)_[A-Za-z0-9]{22}_[a-f0-9]{40}",
        &["ccipat_", "cciprj_"],
    ),
    token(
        "hubspot-token",
        "a HubSpot private app token",
        r"\bpat-(?:na|eu|ap)\d-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        &["pat-ap", "pat-eu", "pat-na"],
    ),
    token(
        "plaid-token",
        "a Plaid access token",
        r"\baccess-(?:sandbox|development|production)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        &["access-development-", "access-production-", "access-sandbox-"],
    ),
    rule(
        "microsoft-teams-webhook",
        "a Microsoft Teams or Office 365 webhook URL",
        r"(?i)\b[a-z0-9-]+\.webhook\.office\.com/webhookb2/[A-Za-z0-9@/\-]{40,}",
        &[".webhook.office.com/webhookb2/"],
    ),
    token(
        "google-oauth-refresh-token",
        "a Google OAuth refresh token",
        r"\b1//0[A-Za-z0-9_\-]{40,}",
        &["1//0"],
    ),
    token(
        "azure-devops-token",
        "an Azure DevOps personal access token",
        // Microsoft's identifiable format: 52 characters, the `JQQJ99` signature, `AZDO`.
        r"\b[A-Za-z0-9]{52}JQQJ9[9DH][A-Za-z0-9]{14,20}AZDO[A-Za-z0-9]{4}",
        &["azdo"],
    ),
    token(
        "adobe-client-secret",
        "an Adobe client secret",
        r"\bp8e-[A-Za-z0-9]{32}",
        &["p8e-"],
    ),
    token(
        "aws-bedrock-api-key",
        "an Amazon Bedrock API key",
        r"\bABSK[A-Za-z0-9+/]{109,}={0,2}",
        &["absk"],
    ),
    token(
        "clickhouse-cloud-key",
        "a ClickHouse Cloud API secret",
        r"\b4b1d[A-Za-z0-9]{38}",
        &["4b1d"],
    ),
    token(
        "defined-networking-token",
        "a Defined Networking API token",
        r"\bdnkey-[A-Za-z0-9=_\-]{26}-[A-Za-z0-9=_\-]{52}",
        &["dnkey-"],
    ),
    token(
        "duffel-token",
        "a Duffel API token",
        r"\bduffel_(?:test|live)_[A-Za-z0-9_\-=]{43}",
        &["duffel_live_", "duffel_test_"],
    ),
    token(
        "frameio-token",
        "a Frame.io API token",
        r"\bfio-u-[A-Za-z0-9_\-=]{64}",
        &["fio-u-"],
    ),
    token(
        "harness-token",
        "a Harness API key",
        r"\b(?:pat|sat)\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}",
        &["pat.", "sat."],
    ),
    token(
        "intra42-secret",
        "a 42 Intra client secret",
        r"\bs-s4t2(?:ud|af)-[a-f0-9]{64}",
        &["s-s4t2af-", "s-s4t2ud-"],
    ),
    token(
        "maxmind-license-key",
        "a MaxMind license key",
        r"\b[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk",
        &["_mmk"],
    ),
    token(
        "octopus-deploy-key",
        "an Octopus Deploy API key",
        r"\bAPI-[A-Z0-9]{26}",
        &["api-"],
    ),
    token(
        "openshift-token",
        "an OpenShift user token",
        r"\bsha256~[A-Za-z0-9_\-]{43}",
        &["sha256~"],
    ),
    token(
        "scalingo-token",
        "a Scalingo API token",
        r"\btk-us-[A-Za-z0-9_\-]{48}",
        &["tk-us-"],
    ),
    token(
        "settlemint-token",
        "a SettleMint access token",
        r"\bsm_(?:aat|pat|sat)_[A-Za-z0-9]{16}",
        &["sm_aat_", "sm_pat_", "sm_sat_"],
    ),
    token(
        "authress-key",
        "an Authress service client key",
        r"\b(?:sc|ext|scauth|authress)_[A-Za-z0-9]{5,30}\.[A-Za-z0-9]{4,6}\.acc[_-][A-Za-z0-9-]{10,32}\.[A-Za-z0-9+/_=-]{30,}",
        &[".acc-", ".acc_"],
    ),
    rule(
        "sidekiq-credentials",
        "Sidekiq Enterprise gem credentials",
        r"(?i)\b(?:https?://[a-f0-9]{8}:[a-f0-9]{8}@(?:gems|enterprise)\.contribsys\.com|BUNDLE_(?:ENTERPRISE|GEMS)__CONTRIBSYS__COM\s*[=:]\s*[\x22']?[a-f0-9]{8}:[a-f0-9]{8})",
        &[
            "bundle_enterprise__contribsys__com",
            "bundle_gems__contribsys__com",
            "http",
        ],
    ),
    valued(
        "nuget-config-password",
        "a password in a NuGet config",
        r#"(?i)<add\s+key=\\?"(?:ClearText)?Password\\?"\s+value=\\?"(?P<value>[^"\\]{3,})"#,
        &["value="],
        Value::Literal,
    ),
    valued(
        "vendor-credential",
        "a credential labelled with a service's name",
        // gitleaks' families that have no prefix of their own (a Datadog, Twitter or Okta key
        // is found by the name beside it): the service's name and a credential word in the
        // label (`azdo pat:`, `TWITTER_ACCESS_SECRET=`), a value of letters and digits.
        r#"(?i)\b[a-z0-9_.\-]*?(?:adafruit|algolia|alibaba|asana|atlassian|azure[_-]?devops|azdo|beamer|bitbucket|bittrex|cloudflare|codecov|cohere|coinbase|confluence|confluent|contentful|datadog|discord|droneci|dropbox|etsy|facebook|fastly|finicity|finnhub|flickr|freshbooks|gitter|gocardless|heroku|hubspot|intercom|jfrog|jira|kucoin|launchdarkly|linkedin|looker|mailgun|mapbox|mattermost|messagebird|netlify|newrelic|new_relic|nytimes|okta|plaid|rapidapi|sendbird|sentry|snyk|sonar|squarespace|sumologic|travis|twitch|twitter|yandex|zendesk)[a-z0-9_.\- \t]{0,20}?(?:key|token|secret|pass|pwd|pat|auth|credential)[a-z0-9_.\-]*["']?\s*(?:=|:=|=>|:)\s*["']?(?P<value>[A-Za-z0-9_\-./+=]{16,})"#,
        &[
            "adafruit",
            "algolia",
            "alibaba",
            "asana",
            "atlassian",
            "azdo",
            "beamer",
            "bitbucket",
            "bittrex",
            "cloudflare",
            "codecov",
            "cohere",
            "coinbase",
            "confluence",
            "confluent",
            "contentful",
            "datadog",
            "devops",
            "discord",
            "droneci",
            "dropbox",
            "etsy",
            "facebook",
            "fastly",
            "finicity",
            "finnhub",
            "flickr",
            "freshbooks",
            "gitter",
            "gocardless",
            "heroku",
            "hubspot",
            "intercom",
            "jfrog",
            "jira",
            "kucoin",
            "launchdarkly",
            "linkedin",
            "looker",
            "mailgun",
            "mapbox",
            "mattermost",
            "messagebird",
            "netlify",
            "new_relic",
            "newrelic",
            "nytimes",
            "okta",
            "plaid",
            "rapidapi",
            "sendbird",
            "sentry",
            "snyk",
            "sonar",
            "squarespace",
            "sumologic",
            "travis",
            "twitch",
            "twitter",
            "yandex",
            "zendesk",
        ],
        Value::Token,
    ),
    // ----- commands and connection files ------------------------------------------------
    valued(
        "command-line-password",
        "a password on a command line",
        // `curl -u user:pass`, `mysql -p'…'` (its password is glued to `-p`), `sshpass -p …`.
        r#"(?:\bcurl\b[^\n]*?\s(?:-u|--user)(?:=|\s+)["']?[^\s:"']+:|\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n]*?\s-p|\bsshpass\b[^\n]*?\s-p\s*)["']?(?P<value>[^\s"']{3,})"#,
        &["curl", "mariadb", "mysql", "sshpass"],
        Value::Literal,
    ),
    valued(
        "secret-option",
        "a password or token given as a command-line option",
        // `--password VALUE`, `--db-password=VALUE`, `--api-token VALUE`.
        r#"(?i)(?:^|\s)--(?:[a-z0-9]+-)*(?:password|passwd|pass|secret|token|api-?key)(?:=|[ \t]+)["']?(?P<value>[^\s"'\-][^\s"']{2,})"#,
        &["key", "pass", "secret", "token"],
        // Not a plain word: `--no-password mydb` is a flag and an argument.
        Value::Password,
    ),
    valued(
        "pgpass-line",
        "a password line of a .pgpass file",
        // `host:port:database:user:password`, the port a number or `*`.
        r"(?m)(?:^|[ \t])[A-Za-z0-9_.\-*]+:(?:\d{1,5}|\*):[^:\s]+:[^:\s]+:(?P<value>(?:[^:\s\\]|\\.){3,})(?:[ \t]|$)",
        &[":"],
        Value::Password,
    ),
    // ----- generic ----------------------------------------------------------------------
    rule(
        "jwt",
        "a JSON Web Token",
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        &[".eyj"],
    ),
    valued(
        "url-credentials",
        "a URL with a password in it",
        r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]*:(?P<value>[^/\s:@]{3,})@",
        &["://"],
        Value::Literal,
    ),
    valued(
        "basic-auth",
        "HTTP Basic credentials",
        r#"(?i)\b(?:authorization|auth)\b["']?\s*[:=]\s*["']?basic\s+(?P<value>[A-Za-z0-9+/]{8,}={0,2})"#,
        &["basic"],
        Value::Literal,
    ),
    valued(
        "bearer-token",
        "a bearer token",
        r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9_\-.=+/]{20,})",
        &["bearer"],
        Value::Literal,
    ),
    valued(
        "authorization-header",
        "an Authorization header with a token",
        r#"(?i)\b(?:authorization|auth)\b["']?\s*[:=]\s*["']?(?:token|apikey|api-key|key|bot|sso-key|otoken|ssws|dsn|splunk)\s+(?P<value>[A-Za-z0-9_\-.=+/:]{16,})"#,
        &["auth"],
        Value::Literal,
    ),
    valued(
        "docker-config-auth",
        "registry credentials from a Docker config.json",
        r#"(?i)"(?:auth|identitytoken|registrytoken)"\s*:\s*"(?P<value>[A-Za-z0-9+/=_.\-]{12,})""#,
        &["\"auth\"", "\"identitytoken\"", "\"registrytoken\""],
        Value::Literal,
    ),
    valued(
        "netrc-password",
        "a password from a .netrc file",
        r"(?i)\b(?:machine|login|default)\s+\S+(?:\s+\S+){0,4}?\s+password\s+(?P<value>\S{3,})",
        &["password"],
        Value::Password,
    ),
    valued(
        "password-assignment",
        "a password assignment",
        // `PGPASSWORD`, `DB_PASSWORD`, `SMTP_PASS`, `MYSQL_PWD`.
        r#"(?i)\b(?:[a-z0-9_\-]*(?:password|passwd|passphrase|pwd)|(?:[a-z0-9]+[_-])+pass)\b["']?\s*(?:=|:=|=>|:)\s*["']?(?P<value>[^\s"',;]{3,})"#,
        &["pass", "pwd"],
        Value::Literal,
    ),
    valued(
        "password-phrase",
        "a password written out in a sentence",
        // `\S+`, not `\S{1,64}`: 64 copies of a Unicode class three times took 3.7 ms to compile.
        r#"(?i)\b(?:password|passwd|passphrase|passcode|pwd)(?:\s+(?:for|of|to|on)(?:\s+\S+){1,3}?)?\s+(?:is set to|is|was|=)\s+["'`]?(?P<value>[^\s"'`,;]{4,})"#,
        &["passcode", "passphrase", "passwd", "password", "pwd"],
        Value::Password,
    ),
    valued(
        "hex-secret",
        "a hex-encoded key or secret",
        r#"(?i)\b(?:[a-z0-9]+[_-])*(?:key|secret|token|signature|hmac|salt|seed|credentials?|auth)s?\b[^\n]{0,16}?\b(?P<value>[0-9a-f]{64})\b"#,
        &[
            "auth",
            "credential",
            "hmac",
            "key",
            "salt",
            "secret",
            "seed",
            "signature",
            "token",
        ],
        Value::Literal,
    ),
    valued(
        "framework-secret-key",
        "a framework's secret, signing or encryption key",
        // Django's `SECRET_KEY`, Rails' `SECRET_KEY_BASE` and `RAILS_MASTER_KEY`, `JWT_SECRET_KEY`,
        // `ENCRYPTION_KEY`, `SIGNING_KEY`, `SESSION_KEY`: a key named for what it protects.
        r#"(?i)\b(?:[a-z0-9]+[_-])*(?:secret|encryption|decryption|signing|master|session|cookie|hmac|jwt|cipher|crypto)[_-]?key(?:[_-]base)?\b["']?\s*(?:=|:=|=>|:)\s*["']?(?P<value>[A-Za-z0-9_\-./+=]{12,})"#,
        &["key"],
        Value::Token,
    ),
    valued(
        "secret-assignment",
        "a secret, token or API key assignment",
        r#"(?i)\b(?:[a-z0-9]+[_-])*(?:secret|api[_-]?key|apikey|access[_-]?token|auth[_-]?token|refresh[_-]?token|private[_-]?key|client[_-]?secret|token)\b["']?\s*(?:=|:=|=>|:)\s*["']?(?P<value>[A-Za-z0-9_\-./+=]{8,})"#,
        &["key", "private", "secret", "token"],
        Value::Literal,
    ),
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
    /// Every rule's keywords in one automaton, ASCII case-insensitive.
    keywords: AhoCorasick,
    /// The rule of each keyword, by the automaton's pattern index.
    owner: Vec<usize>,
    /// Each rule's own pattern, compiled the first time a text holds one of its keywords: most
    /// texts hold a few (a hook or a one-shot command compiles two or three rules, not all of
    /// them, which cost a one-shot search about a third of its time).
    each: Vec<OnceLock<Regex>>,
    patterns: Vec<String>,
}

/// The rules' patterns as compiled and their keyword automaton, built once. `\b` is made an
/// ASCII word boundary, which a lazy DFA handles on any text (a Unicode boundary makes it fall
/// back to a slower engine on non-ASCII text).
fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let patterns: Vec<String> = RULES.iter().map(compiled_pattern).collect();
        // A rule whose value has a cheaper test than its keywords is picked by that test.
        let (owner, keywords): (Vec<usize>, Vec<&str>) = RULES
            .iter()
            .enumerate()
            .filter(|(_, r)| r.value.prefilter().is_none())
            .flat_map(|(i, r)| r.keywords.iter().map(move |k| (i, *k)))
            .unzip();
        Compiled {
            keywords: AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .build(keywords)
                .expect("the secret rules' keywords build an automaton"),
            owner,
            each: patterns.iter().map(|_| OnceLock::new()).collect(),
            patterns,
        }
    })
}

/// A rule's pattern as it runs:
/// - a vendor token (`glued`) loses its leading `\b`, so it fires glued to the word before it,
///   and its trailing one, so a tail longer than the vendor's documented length still fires
///   (the match is then extended over the rest of the token, see [`matches_of`]);
/// - every `\b` is an ASCII word boundary;
/// - an optional quote may be escaped, as in JSON text (`{"env": "DB_PASSWORD=\"…\""}`).
fn compiled_pattern(rule: &Rule) -> String {
    let mut pattern = rule.pattern;
    if rule.glued {
        pattern = pattern.strip_prefix(r"\b").unwrap_or(pattern);
        pattern = pattern.strip_suffix(r"\b").unwrap_or(pattern);
    }
    pattern
        .replace(r"\b", r"(?-u:\b)")
        .replace(r#"["']?"#, r#"(?:\\?["'])?"#)
}

/// The rules that may fire on `text`, in order: those whose keywords it holds or whose value's
/// prefilter passes (and any rule without keywords).
fn candidates(text: &str) -> Vec<usize> {
    let compiled = compiled();
    let mut hit: Vec<bool> = RULES
        .iter()
        .map(|r| match r.value.prefilter() {
            Some(may_hold) => may_hold(text),
            None => r.keywords.is_empty(),
        })
        .collect();
    for m in compiled.keywords.find_overlapping_iter(text) {
        hit[compiled.owner[m.pattern().as_usize()]] = true;
    }
    (0..RULES.len()).filter(|&i| hit[i]).collect()
}

/// Whether a matched value is a literal rather than a reference, a placeholder or a word that
/// points elsewhere ("see …", "in the vault").
fn is_literal(value: &str) -> bool {
    let first = value.chars().next().unwrap_or(' ');
    if matches!(first, '$' | '<' | '{' | '%' | '*' | '[' | '(') {
        return false;
    }
    let lower = value.to_lowercase();
    const PREFIXES: &[&str] = &[
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
    const POINTERS: &[&str] = &[
        "see",
        "ask",
        "in",
        "from",
        "use",
        "uses",
        "stored",
        "check",
        "via",
        "set",
        "the",
        "our",
        "your",
        "my",
        "same",
        "managed",
        "provided",
        "kept",
        "rotated",
        "defined",
        "configured",
        "hidden",
        "unset",
        "empty",
        "blank",
        "n/a",
        "tbd",
        "secret",
        "password",
        "vault",
    ];
    !PREFIXES.iter().any(|p| lower.starts_with(p))
        && !POINTERS.contains(&lower.as_str())
        && !is_type_name(&lower)
}

/// A type in typed code, not a value: `api_key: SecretStr`, `password: str`,
/// `token: Optional[str]`, `secret: String`. The identifier the value starts with, when it is
/// a known type or a word ending like a string type (`SecretStr`, `SecureString`).
fn is_type_name(lower: &str) -> bool {
    const TYPES: &[&str] = &[
        "str",
        "string",
        "bytes",
        "optional",
        "option",
        "field",
        "sensitive",
        "any",
        "int",
        "bool",
        "text",
        "char",
        "buffer",
        "uint8array",
        "credentials",
        "credential",
    ];
    let head = lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("");
    let rest = &lower[head.len()..];
    let ends_a_type = rest.is_empty() || rest.starts_with(['[', '<', '(', '|', '?', '.']);
    ends_a_type
        && (TYPES.contains(&head)
            || (head.bytes().all(|b| b.is_ascii_alphabetic())
                && ["str", "string", "bytes"].iter().any(|t| head.ends_with(t))))
}

/// Upper case, lower case and digits: what a machine-made key looks like.
fn looks_random(value: &str) -> bool {
    value.bytes().any(|b| b.is_ascii_uppercase())
        && value.bytes().any(|b| b.is_ascii_lowercase())
        && value.bytes().any(|b| b.is_ascii_digit())
}

/// Not a plain word: a digit, a symbol or a capital after the first letter.
fn looks_like_password(value: &str) -> bool {
    value
        .chars()
        .enumerate()
        .any(|(i, c)| c.is_ascii_digit() || !c.is_alphanumeric() || (i > 0 && c.is_uppercase()))
}

/// Letters and digits both: what a generated key holds and an identifier rarely does.
fn looks_made(value: &str) -> bool {
    value.bytes().any(|b| b.is_ascii_digit()) && value.bytes().any(|b| b.is_ascii_alphabetic())
}

/// Code that computes or looks up a value rather than a value: a member path
/// (`config.apiKey`, `settings.SECRET_KEY`), a call (`hashPassword(raw)`, `getenv(…)`) or a
/// path into a type (`SigningKey::generate`). `after` is the text that follows the value.
fn is_code(value: &str, after: &str) -> bool {
    let (head, called) = match value.find(['(', '[']) {
        Some(at) => (&value[..at], true),
        None => (value, after.starts_with(['(', '[']) || after.starts_with("::")),
    };
    let identifier = |s: &str| {
        s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
    };
    let segments: Vec<&str> = head.split('.').collect();
    // A generated value's first piece holds digits (`eyJhbGciOiJIUzI1NiJ9.…`); a name seldom does.
    segments.iter().all(|s| identifier(s))
        && !segments[0].bytes().any(|b| b.is_ascii_digit())
        && (called || segments.len() > 1)
}

/// A label that says its value is public: a public key, a fingerprint, a digest.
fn labelled_public(label: &str) -> bool {
    let label = label.to_ascii_lowercase();
    ["public", "pubkey", "fingerprint", "checksum", "digest"]
        .iter()
        .any(|w| label.contains(w))
}

/// The decoded start of a base64 text: whether it is a PEM private key (not a certificate
/// or a public key).
fn decodes_to_private_key(value: &str) -> bool {
    use base64::Engine as _;
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    // A PEM header is at most 64 bytes: 96 characters of base64 hold it.
    let head = value.trim_end_matches('=');
    let head = &head[..head.len().min(96) / 4 * 4];
    engine
        .decode(head)
        .is_ok_and(|bytes| bytes.windows(11).any(|w| w == b"PRIVATE KEY"))
}

/// Twelve or more words in a row from the BIP39 English list, at least eight of them
/// different: a wallet's seed phrase. Ordinary sentences break such runs with short words
/// ("a", "is", "the") that the list leaves out; a word repeated is a pattern, not a phrase.
fn holds_seed_phrase(run: &str) -> bool {
    let mut in_a_row = 0;
    let mut distinct = std::collections::HashSet::new();
    for word in run.split_ascii_whitespace() {
        if bip39::Language::English.find_word(word).is_some() {
            in_a_row += 1;
            distinct.insert(word);
            if in_a_row >= 12 && distinct.len() >= 8 {
                return true;
            }
        } else {
            in_a_row = 0;
            distinct.clear();
        }
    }
    false
}

/// Whether `text` may hold twelve BIP39 words in a row, cheaply: such a run covers a word at a
/// position 12, 24, 36, … of the text's words, so only those are looked up (none in a text
/// of fewer than twelve words). A run's first and last words may carry what stands before or
/// after them (`(abandon`, `zoo.`), so a word's leading and trailing letters are both tried.
fn may_hold_seed_phrase(text: &str) -> bool {
    let in_list = |w: &str| bip39::Language::English.find_word(w).is_some();
    text.split_whitespace().skip(11).step_by(12).any(|token| {
        let apart = |c: char| !c.is_ascii_alphanumeric() && c != '_';
        token.split(apart).next().is_some_and(in_list) || token.rsplit(apart).next().is_some_and(in_list)
    })
}

impl Value {
    /// A test cheaper than a rule's keywords for whether a text may hold such a value: the
    /// rule runs only on texts it passes, and its keywords stay out of the automaton.
    fn prefilter(self) -> Option<fn(&str) -> bool> {
        match self {
            Value::SeedPhrase => Some(may_hold_seed_phrase),
            _ => None,
        }
    }
}

fn value_counts(kind: Value, value: &str, after: &str) -> bool {
    let literal = || is_literal(value) && !is_code(value, after);
    match kind {
        Value::Any => true,
        Value::Literal => literal(),
        Value::Random => literal() && looks_random(value),
        Value::Password => literal() && looks_like_password(value),
        Value::Token => literal() && looks_made(value),
        Value::Base64PrivateKey => decodes_to_private_key(value),
        Value::SeedPhrase => holds_seed_phrase(value),
    }
}

/// Every match of rule `index` in `text` that counts as a secret, as byte ranges.
fn matches_of(index: usize, text: &str) -> Vec<Range<usize>> {
    let rule = &RULES[index];
    let compiled = compiled();
    let regex = compiled.each[index]
        .get_or_init(|| Regex::new(&compiled.patterns[index]).expect("the secret rules are valid regexes"));
    let mut found: Vec<Range<usize>> = match rule.value {
        // No value to check: the match alone (without the slower capture engine).
        Value::Any | Value::SeedPhrase => regex
            .find_iter(text)
            .filter(|m| value_counts(rule.value, m.as_str(), ""))
            .map(|m| m.range())
            .collect(),
        _ => regex
            .captures_iter(text)
            .filter_map(|c| {
                let whole = c.get(0)?;
                let value = c.name("value").or_else(|| c.name("legacy"))?;
                let label = &text[whole.start()..value.start()];
                (!labelled_public(label) && value_counts(rule.value, value.as_str(), &text[value.end()..]))
                    .then(|| whole.range())
            })
            .collect(),
    };
    if rule.glued {
        // A longer tail than the vendor documents is the same token: redact all of it.
        for r in &mut found {
            r.end += text[r.end..]
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
                .count();
        }
    }
    found
}

/// Characters that render as nothing and can split a secret without showing: zero-width
/// spaces and joiners, the soft hyphen, word joiners, bidirectional marks, variation selectors,
/// the byte order mark, Hangul fillers and tag characters.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}'
        | '\u{180b}'..='\u{180f}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{206f}' | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{feff}' | '\u{ffa0}'
        | '\u{1bca0}'..='\u{1bca3}' | '\u{e0000}'..='\u{e0fff}')
}

/// A copy of `text` for detection only: invisible characters dropped, the rest NFKC-folded
/// character by character, with the byte offset in `text` of every byte of the copy (and one
/// past the end). `None` when folding changes nothing (all ASCII, the common case).
fn fold(text: &str) -> Option<(String, Vec<usize>)> {
    if text.is_ascii() {
        return None;
    }
    let mut folded = String::with_capacity(text.len());
    let mut origin = Vec::with_capacity(text.len() + 1);
    for (at, c) in text.char_indices() {
        if is_invisible(c) {
            continue;
        }
        let before = folded.len();
        if c.is_ascii() {
            folded.push(c);
        } else {
            folded.extend(std::iter::once(c).nfkc());
        }
        origin.extend(std::iter::repeat_n(at, folded.len() - before));
    }
    if folded == text {
        return None;
    }
    origin.push(text.len());
    Some((folded, origin))
}

/// The first rule `text` breaks, checking the text as given and then its folded copy.
fn first_hit(text: &str) -> Option<usize> {
    let fires = |i: &usize, text: &str| !matches_of(*i, text).is_empty();
    if let Some(i) = candidates(text).into_iter().find(|i| fires(i, text)) {
        return Some(i);
    }
    let (folded, _) = fold(text)?;
    candidates(&folded).into_iter().find(|i| fires(i, &folded))
}

/// Build the rules' keyword automaton now, once per process (about half a millisecond), so
/// that the first text checked or redacted does not wait for it. A one-shot process that is
/// about to read memories can call it on a thread of its own while the database opens.
pub fn prepare() {
    compiled();
}

/// The first rule `text` breaks, if any.
pub fn find_secret(text: &str) -> Option<SecretFinding> {
    first_hit(text).map(|i| SecretFinding {
        rule: RULES[i].name,
        description: RULES[i].description,
    })
}

/// `text` with every secret replaced by `[REDACTED:rule]` (secrets found only in the folded
/// copy are cut out of the original text, invisible characters and all).
pub fn redact(text: &str) -> String {
    let mut ranges: Vec<(Range<usize>, usize)> = Vec::new();
    for i in candidates(text) {
        ranges.extend(matches_of(i, text).into_iter().map(|r| (r, i)));
    }
    if let Some((folded, origin)) = fold(text) {
        for i in candidates(&folded) {
            for r in matches_of(i, &folded) {
                ranges.push((origin[r.start]..origin[r.end], i));
            }
        }
    }
    if ranges.is_empty() {
        return text.to_string();
    }
    // Leftmost first; at one start, the first rule in order names the redaction.
    ranges.sort_by_key(|(r, i)| (r.start, *i));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (r, i) in ranges {
        let name = RULES[i].name;
        if r.end <= at {
            continue;
        }
        if r.start >= at {
            out.push_str(&text[at..r.start]);
            out.push_str(&format!("[REDACTED:{name}]"));
        }
        // An overlapping match extends the redaction already written.
        at = r.end;
    }
    out.push_str(&text[at..]);
    out
}

/// A database URL with its password replaced by `***`, wherever it is given: in the authority
/// (`postgres://user:pw@host`) or as a `password=` parameter (in a query string or a key/value
/// connection string). Works on a sentence holding URLs too, so an error message can be passed
/// through it whole. Every error and log line that names a server database shows this.
///
/// ```
/// use ctxkit_secrets::redact_url;
/// assert_eq!(redact_url("postgres://ann:s3cret@db:5432/mem"), "postgres://ann:***@db:5432/mem");
/// // The password ends at the `@`, as PostgreSQL reads it, even past a `/`.
/// assert_eq!(redact_url("postgres://ann:s3/cr?et@db/mem"), "postgres://ann:***@db/mem");
/// assert_eq!(redact_url("postgresql://db/mem?user=ann&password=s3cret"), "postgresql://db/mem?user=ann&password=***");
/// assert_eq!(redact_url("host=db password='s3 cret' user=ann"), "host=db password=*** user=ann");
/// assert_eq!(redact_url("cannot open postgress://ann:s3cret@db/mem: no such file"), "cannot open postgress://ann:***@db/mem: no such file");
/// assert_eq!(redact_url("postgres://ann:s3\tcr et@db/mem"), "postgres://ann:***@db/mem");
/// assert_eq!(redact_url("/home/ann/memory.db"), "/home/ann/memory.db");
/// ```
pub fn redact_url(text: &str) -> String {
    static PATTERNS: OnceLock<(Regex, Regex)> = OnceLock::new();
    let (authority, param) = PATTERNS.get_or_init(|| {
        (
            // Up to the `@` even past spaces and tabs (a password may hold them); only a line
            // break ends the search, so a later `@` on the line may widen what is hidden.
            Regex::new(r"([A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s]*:)[^@\r\n]*@").expect("a valid pattern"),
            Regex::new(r"(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^&\s]*)").expect("a valid pattern"),
        )
    });
    let shown = authority.replace_all(text, "${1}***@");
    param.replace_all(&shown, "${1}***").into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` characters of a mixed-case alphanumeric run.
    fn r(n: usize) -> String {
        "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5kL7n"
            .chars()
            .cycle()
            .take(n)
            .collect()
    }
    /// `n` lowercase hex digits.
    fn h(n: usize) -> String {
        "3f9a0c7e1b5d8264".chars().cycle().take(n).collect()
    }
    /// `n` lowercase letters and digits.
    fn l(n: usize) -> String {
        "a3k9x2m7q4z8w1r5".chars().cycle().take(n).collect()
    }

    /// `-----BEGIN {kind} PRIVATE KEY-----` and a body, base64-encoded (as a kubeconfig keeps it).
    fn b64_key(kind: &str) -> String {
        use base64::Engine as _;
        let pem = format!(
            "-----BEGIN {kind} {}-----\nMHcCAQEEIIrYSSNQFaA2Hwf1duRSxKtLYX5CB04fSeQ6tF1aY/PuoAoGCCqGSM49\n",
            "PRIVATE KEY"
        );
        base64::engine::general_purpose::STANDARD.encode(pem)
    }

    /// True positives: at least one example per rule, each built from pieces so this file does
    /// not itself look like it holds credentials.
    fn examples() -> Vec<(&'static str, String)> {
        vec![
            ("pem-private-key", format!("-----BEGIN RSA {}-----\nMII", "PRIVATE KEY")),
            ("pem-private-key", format!("-----BEGIN OPENSSH {}-----", "PRIVATE KEY")),
            ("age-secret-key", format!("AGE-SECRET-{}{}", "KEY-1", &"QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L".repeat(2)[..58])),
            ("putty-private-key", format!("PuTTY-User-{}-3: ssh-ed25519", "Key-File")),
            ("aws-access-key-id", format!("AKIA{}", "IOSFODNN7EXAMPLE")),
            ("aws-secret-access-key", format!("aws_secret_access_key = {}", r(40))),
            ("aws-secret-key-in-context", format!("the aws key is {}", r(40))),
            ("aws-secret-key-in-context", format!("AWS: \"{}\"", r(40))),
            ("aws-mws-key", format!("amzn.mws.{}-{}-{}-{}-{}", h(8), h(4), h(4), h(4), h(12))),
            (
                "azure-storage-account-key",
                format!("DefaultEndpointsProtocol=https;AccountName=acct;Account{}={}==;EndpointSuffix=core.windows.net", "Key", r(86)),
            ),
            ("azure-sas-token", format!("https://acct.blob.core.windows.net/c?sv=2022-11-02&se=2030-01-01&s{}={}%3D", "ig", r(43))),
            (
                "azure-shared-access-key",
                format!("Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccess{}={}=", "Key", r(43)),
            ),
            ("azure-ad-client-secret", format!("abc8{}~{}", "Q", r(34))),
            ("google-api-key", format!("AIza{}", r(35))),
            ("google-oauth-client-secret", format!("GOCSPX-{}", r(28))),
            ("google-oauth-token", format!("ya29.{}", r(40))),
            ("alibaba-access-key-id", format!("LTAI{}", r(20))),
            ("digitalocean-token", format!("dop_v1_{}", h(64))),
            ("heroku-api-key", format!("HRKU-AA{}", r(58))),
            ("hashicorp-vault-token", format!("hvs.{}", r(90))),
            ("terraform-cloud-token", format!("{}.atlasv1.{}", r(14), r(67))),
            ("pulumi-token", format!("pul-{}", h(40))),
            ("doppler-token", format!("dp.pt.{}", r(43))),
            ("doppler-token", format!("dp.st.dev.{}", r(40))),
            ("supabase-secret-key", format!("sb_secret_{}", r(31))),
            ("fly-io-token", format!("FlyV1 fm2_{}", r(120))),
            ("tailscale-key", format!("tskey-auth-k{}-{}", r(10), r(30))),
            ("dynatrace-token", format!("dt0c01.{}.{}", "ST2EY72KQINMH574WMNVI7YN", "G3DFPBEJYMODIDAEX454M7YWBUVEFOWKPRVMWFASS64NFH52PX6BNDVFFM572RZM")),
            ("yandex-cloud-key", format!("AQVN{}", r(36))),
            ("neon-api-key", format!("napi_{}", l(64))),
            ("deno-deploy-token", format!("ddp_{}", r(36))),
            ("netlify-token", format!("nfp_{}", r(36))),
            ("databricks-token", format!("dapi{}", h(32))),
            ("supabase-token", format!("sbp_{}", h(40))),
            ("cloudflare-origin-ca-key", format!("v1.0-{}-{}", h(24), h(146))),
            ("github-token", format!("ghp_{}", r(36))),
            ("github-fine-grained-token", format!("github_pat_{}", r(40))),
            ("gitlab-token", format!("glpat-{}", r(20))),
            ("bitbucket-app-password", format!("ATATT3x{}", r(60))),
            ("npm-token", format!("npm_{}", r(36))),
            ("npmrc-auth-token", format!("//registry.npmjs.org/:_auth{}={}", "Token", r(36))),
            ("pypi-token", format!("pypi-AgEIcHlwaS5vcmc{}", r(60))),
            ("rubygems-api-key", format!("rubygems_{}", h(48))),
            ("nuget-api-key", format!("oy2{}", l(43))),
            ("clojars-token", format!("CLOJARS_{}", l(60))),
            ("docker-hub-token", format!("dckr_pat_{}", r(27))),
            ("postman-api-key", format!("PMAK-{}-{}", h(24), h(34))),
            ("linear-api-key", format!("lin_api_{}", r(40))),
            ("buildkite-token", format!("bkua_{}", h(40))),
            ("sourcegraph-token", format!("sgp_{}_{}", h(16), h(40))),
            ("figma-token", format!("figd_{}", r(40))),
            ("prefect-token", format!("pnu_{}", r(36))),
            ("readme-api-key", format!("rdme_{}", l(70))),
            ("typeform-token", format!("tfp_{}", r(59))),
            ("artifactory-token", format!("AKCp{}", r(69))),
            ("infracost-api-key", format!("ico-{}", r(32))),
            ("onepassword-secret-key", format!("A3-{}-{}-{}-{}-{}", "ASWWYB", "798JRYLJVD4", "23DC2", "86TVM", "H43EB")),
            ("sentry-token", format!("sntryu_{}", h(64))),
            ("grafana-token", format!("glsa_{}_{}", r(32), h(8))),
            ("new-relic-key", format!("NRAK-{}", r(27))),
            ("planetscale-token", format!("pscale_tkn_{}", r(43))),
            ("onepassword-service-token", format!("ops_eyJ{}", r(120))),
            ("airtable-token", format!("pat{}.{}", r(14), h(64))),
            ("notion-token", format!("ntn_{}{}", "12345678901", r(35))),
            ("mapbox-token", format!("sk.eyJ{}.{}", r(60), r(22))),
            ("dropbox-token", format!("sl.{}", r(140))),
            ("anthropic-api-key", format!("sk-ant-api03-{}", r(40))),
            ("openai-api-key", format!("sk-proj-{}", r(40))),
            ("openai-api-key", format!("sk-{}", r(48))),
            ("huggingface-token", format!("hf_{}", r(34))),
            ("sk-vendor-api-key", format!("sk-or-v1-{}", h(64))),
            ("sk-hex-api-key", format!("sk-{}", h(32))),
            ("langfuse-secret-key", format!("sk-lf-{}-{}-{}-{}-{}", h(8), h(4), h(4), h(4), h(12))),
            ("xai-api-key", format!("xai-{}", r(80))),
            ("pinecone-api-key", format!("pcsk_{}_{}", r(6), r(60))),
            ("langsmith-api-key", format!("lsv2_pt_{}_{}", h(32), h(10))),
            ("fireworks-api-key", format!("fw_{}", r(24))),
            ("groq-api-key", format!("gsk_{}", r(52))),
            ("replicate-token", format!("r8_{}", r(37))),
            ("perplexity-api-key", format!("pplx-{}", r(48))),
            ("slack-token", format!("xoxb-{}-{}", "1234567890", r(24))),
            ("slack-app-token", format!("xapp-1-A0{}-1234567890-{}", "12BCDEF", l(40))),
            ("slack-webhook", format!("https://hooks.slack.com/services/T000/B000/{}", r(24))),
            ("discord-webhook", format!("https://discord.com/api/web{}/123456789012345678/{}", "hooks", r(68))),
            ("discord-bot-token", format!("M{}.{}.{}", r(25), r(6), r(38))),
            ("telegram-bot-token", format!("{}:AA{}", "123456789", r(33))),
            ("twilio-key", format!("SK{}", h(32))),
            ("twilio-key", format!("AC{}", h(32))),
            ("sendgrid-api-key", format!("SG.{}.{}", r(22), r(43))),
            ("mailgun-api-key", format!("key-{}", h(32))),
            ("mailchimp-api-key", format!("{}-us12", h(32))),
            ("stripe-key", format!("sk_live_{}", r(24))),
            ("firebase-cloud-messaging-key", format!("AAAA{}:APA91b{}", r(7), r(134))),
            ("resend-api-key", format!("re_{}_{}", r(8), r(24))),
            ("easypost-api-key", format!("EZAK{}", r(54))),
            ("flutterwave-key", format!("FLWSECK_TEST-{}-X", h(32))),
            ("shippo-token", format!("shippo_live_{}", h(40))),
            ("stripe-webhook-secret", format!("whsec_{}", r(32))),
            ("square-token", format!("sq0atp-{}", r(22))),
            ("shopify-token", format!("shpat_{}", h(32))),
            ("facebook-access-token", format!("EAAB{}", r(100))),
            ("twitter-bearer-token", format!("{}{}", "A".repeat(22), r(40))),
            ("jwt", format!("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.{}", r(20))),
            ("url-credentials", "postgres://admin:s3cretpw@db.internal:5432/app".to_string()),
            ("url-credentials", format!("redis://:{}@cache.internal:6379", "s3cretpw")),
            ("basic-auth", format!("Authorization: Basic {}", "dXNlcjpodW50ZXIy")),
            ("bearer-token", format!("Authorization: Bearer {}", r(32))),
            ("authorization-header", format!("Authorization: Token {}", h(40))),
            ("authorization-header", format!("authorization: SSWS {}", r(42))),
            ("docker-config-auth", format!("{{\"auths\": {{\"ghcr.io\": {{\"auth\": \"{}\"}}}}}}", "YW5uOmh1bnRlcjJodW50ZXIy")),
            ("netrc-password", format!("machine api.example.com login ann password {}", "Xk29fa8q")),
            ("netrc-password", format!("machine db\n  login ann\n  password {}", "s3cr3t!")),
            ("password-assignment", "password=hunter22".to_string()),
            ("password-assignment", format!("PGPASSWORD={} psql -h db", "Tr0ub4dor")),
            ("password-assignment", format!("SMTP_PASS={}", "mail-s3cret")),
            ("password-assignment", "DB_PASSWORD: \"correct-horse\"".to_string()),
            ("password-phrase", format!("my password is {}", "hunter2")),
            ("password-phrase", format!("the password for the prod db is {}", "Tr0ub4dor")),
            ("hex-secret", format!("the signing key is {}", h(64))),
            ("hex-secret", format!("WEBHOOK_SECRET {}", h(64))),
            ("secret-assignment", format!("secret={}", r(16))),
            ("secret-assignment", format!("OPENAI_API_KEY={}", r(16))),
            ("secret-assignment", format!("\"client_secret\": \"{}\"", r(16))),
            ("base64-private-key", format!("client-key-data: {}", b64_key("EC"))),
            ("seed-phrase", "legal winner thank year wave sausage worth useful legal winner thank yellow".to_string()),
            ("gitlab-runner-registration-token", format!("GR1348941{}", r(20))),
            ("gitlab-session-cookie", format!("_gitlab_{}={}", "session", l(32))),
            ("brevo-api-key", format!("xkeysib-{}-{}", h(64), r(16))),
            ("contentful-token", format!("CFPAT-{}", r(43))),
            ("sonarqube-token", format!("squ_{}", h(40))),
            ("circleci-token", format!("CCIPAT_{}_{}", r(22), h(40))),
            ("hubspot-token", format!("pat-na1-{}-{}-{}-{}-{}", h(8), h(4), h(4), h(4), h(12))),
            ("plaid-token", format!("access-sandbox-{}-{}-{}-{}-{}", h(8), h(4), h(4), h(4), h(12))),
            (
                "microsoft-teams-webhook",
                format!("https://acme.webhook.office.com/{}/{}@{}/IncomingWebhook/{}", "webhookb2", h(36), h(36), h(32)),
            ),
            ("google-oauth-refresh-token", format!("1//0{}", r(60))),
            ("azure-devops-token", format!("{}JQQJ99{}AZDO{}", r(52), r(18), r(4))),
            ("adobe-client-secret", format!("p8e-{}", r(32))),
            ("aws-bedrock-api-key", format!("ABSK{}", r(120))),
            ("clickhouse-cloud-key", format!("4b1d{}", r(38))),
            ("defined-networking-token", format!("dnkey-{}-{}", r(26), r(52))),
            ("duffel-token", format!("duffel_live_{}", r(43))),
            ("frameio-token", format!("fio-u-{}", r(64))),
            ("harness-token", format!("pat.{}.{}.{}", r(22), r(24), r(20))),
            ("intra42-secret", format!("s-s4t2ud-{}", h(64))),
            ("maxmind-license-key", format!("{}_{}_mmk", r(6), r(29))),
            ("octopus-deploy-key", format!("API-{}", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")),
            ("openshift-token", format!("sha256~{}", r(43))),
            ("scalingo-token", format!("tk-us-{}", r(48))),
            ("settlemint-token", format!("sm_pat_{}", r(16))),
            ("authress-key", format!("sc_{}.{}.acc_{}.{}", r(10), r(5), r(16), r(40))),
            ("sidekiq-credentials", format!("BUNDLE_GEMS__CONTRIBSYS__COM={}:{}", h(8), h(8))),
            ("nuget-config-password", format!("<add key=\"ClearText{}\" value=\"{}\" />", "Password", "hunter2hunter")),
            ("vendor-credential", format!("DATADOG_APP_KEY_V2={}", h(40))),
            ("vendor-credential", format!("azdo pat: {}", r(52))),
            ("command-line-password", format!("curl -u admin:{} https://api.example.com", "Sup3rS3cret")),
            ("command-line-password", format!("mysql -u root -p'{}' app", "Hunter2Pass!")),
            ("command-line-password", format!("sshpass -p '{}' ssh deploy@host", "Hunter2Pass!")),
            ("secret-option", format!("psql --{} {}", "password", "Hunter2Pass!")),
            ("secret-option", format!("deploy --api-{}={}", "token", r(24))),
            ("pgpass-line", format!("db.example.com:5432:app:alice:{}", "S3cretPg!")),
            ("framework-secret-key", format!("SECRET_{}=django-insecure-{}", "KEY", l(40))),
            ("framework-secret-key", format!("SECRET_KEY_{}={}", "BASE", h(128))),
            ("framework-secret-key", format!("RAILS_MASTER_{}={}", "KEY", h(32))),
            ("framework-secret-key", format!("JWT_SECRET_{}: \"{}\"", "KEY", r(32))),
        ]
    }

    #[test]
    fn there_are_enough_rules_and_each_fires_on_its_example() {
        assert!(RULES.len() >= 60, "{} rules", RULES.len());
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
        for name in RULES.iter().map(|r| r.name) {
            assert!(fired.contains(&name), "rule {name} has no example");
        }
    }

    /// Variants of the families the examples do not show (other environments, kinds, lengths
    /// and spellings), each refused and redacted without a trace.
    #[test]
    fn held_out_variants_of_each_family_are_refused() {
        for text in [
            format!("sb_secret_{}", r(40)),
            format!("fo1_{}", r(43)),
            format!("fm1r_{}", r(90)),
            format!("dp.st.prd_eu.{}", r(43)),
            format!("tskey-client-k{}-{}", r(8), r(40)),
            format!("tskey-api-k{}-{}", r(12), r(24)),
            format!("sk-or-v2-{}", h(64)),
            format!("sk-{}", h(48)),
            format!("{{\"identitytoken\": \"{}\"}}", r(40)),
            format!("default login ann password {}", "pa55word!"),
            format!("export PGPASSWORD='{}'", "Tr0ub4dor"),
            format!("MYSQL_PWD={}", "x9-secret"),
            format!("DB_PASS: {}", "hunter2hunter"),
            format!("AAAA{}:APA91b{}", r(7), r(140)),
            format!("authorization: token {}", h(32)),
            format!("pcsk_{}_{}", r(5), r(70)),
            format!("xai-{}", r(84)),
            format!("lsv2_sk_{}_{}", h(32), h(10)),
            format!("bkat_{}", r(40)),
            format!("nfc_{}", r(40)),
            format!("my token is xglpat-{}", r(20)),
            // Other kinds and spellings of this round's families.
            format!("sk-ant-sid01-{}AA", r(93)),
            format!("xoxc-{}-{}-{}", l(10), l(12), h(64)),
            format!("xoxd-{}%2B{}", r(40), r(20)),
            format!("sqp_{}", h(40)),
            format!("access-production-{}-{}-{}-{}-{}", h(8), h(4), h(4), h(4), h(12)),
            format!("pat-eu1-{}-{}-{}-{}-{}", h(8), h(4), h(4), h(4), h(12)),
            format!("ENCRYPTION_{}={}", "KEY", r(44)),
            format!("SIGNING_{}: {}", "KEY", r(24)),
            format!("export SESSION_{}='{}'", "KEY", r(32)),
            format!("mysqldump -uroot -p{} app > app.sql", "Hunter2Pass"),
            format!("curl --user ann:{} https://x.example", "pa55w0rd"),
            format!("tool --db-{}={}", "password", "Tr0ub4dor&3"),
            format!("private_key_b64: {}", b64_key("RSA")),
            format!("---- BEGIN SSH2 ENCRYPTED {} ----\nComment: \"k\"\nP2/56wAAAi4AAAA3aWYtbW9kbntzaWdue3JzYS1w\n---- END SSH2 ENCRYPTED PRIVATE KEY ----", "PRIVATE KEY"),
            "abandon ability able about above absent absorb abstract absurd abuse access accident account".to_string(),
            // A vendor prefix followed by a longer tail than the vendor documents.
            format!("nfp_{}", r(44)),
            format!("dp.st.prd.{}", r(45)),
            format!("ghp_{}", r(50)),
            // Quotes escaped as in JSON text.
            format!("{{\"command\": \"DB_PASSWORD=\\\"{}\\\" psql\"}}", "hunter2x"),
            format!("{{\"command\": \"API_KEY=\\\"{}\\\" ./run\"}}", r(24)),
            format!("{{\"env\": \"AWS_SECRET_ACCESS_KEY=\\\"{}\\\"\"}}", r(40)),
            format!("\"{{\\\"password\\\": \\\"{}\\\"}}\"", "hunter2x"),
        ] {
            let line = format!("note: {text} (keep it safe)");
            assert!(find_secret(&line).is_some(), "not refused: {text}");
            let red = redact(&line);
            assert!(!red.contains(&text), "echoed: {red}");
        }
    }

    /// The seed-phrase prefilter looks up one word in twelve: a phrase is still found wherever
    /// it starts among other words, glued to punctuation or one word per line.
    #[test]
    fn a_seed_phrase_is_found_at_every_offset() {
        let phrase = "legal winner thank year wave sausage worth useful legal winner thank yellow";
        for before in 0..13 {
            let text = format!("{}(\"{phrase}\").", "Note this down ".repeat(before));
            assert_eq!(find_secret(&text).map(|f| f.rule), Some("seed-phrase"), "{text}");
            assert!(!redact(&text).contains("sausage"), "{}", redact(&text));
        }
        assert!(find_secret(&phrase.replace(' ', "\n")).is_some());
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
            "Deploy with sk-learn-compatible-model-v2-production-release",
            "password: \"see 1Password vault entry 'prod-db'\"",
            "the password is hashed with argon2",
            "the password is required on first login",
            "passwords are hashed with argon2",
            "git clone https://github.com/org/repo.git",
            "the tokenizer splits text into tokens",
            "JWTs are signed with HS256",
            "postgres://localhost:5432/app",
            "//registry.npmjs.org/:_authToken=${NPM_TOKEN}",
            "aws s3 sync ./build s3://my-bucket/releases/2024/frontend --delete",
            "Basic auth is disabled behind the proxy",
            "the release archive's sha256 is 3f9a0c7e1b5d82643f9a0c7e1b5d82643f9a0c7e1b5d82643f9a0c7e1b5d8264",
            "Microsoft.Extensions.DependencyInjection is the container",
            "use ＡＷＳ regions close to users",
            // Typed code: types, not values.
            "settings has api_key: SecretStr loaded from the environment",
            "class Settings(BaseSettings): api_key: SecretStr; password: str; token: Optional[str] = None",
            "struct Config { password: String, api_token: SecureString }",
            "def connect(password: str, secret: bytes) -> None:",
            "the login page has a password reset link",
            "machine learning models need a password manager",
            "Authorization: Token <your token>",
            "\"auth\": \"${DOCKER_AUTH}\"",
            "sk-learn and sk-image are libraries",
            "the tskey-auth- prefix marks Tailscale auth keys",
            // Code that names or computes a value, not a value.
            "apiKey: config.apiKey",
            "password: hashPassword(raw)",
            "password = request.form['password']",
            "secret_key: settings.SECRET_KEY",
            "session_key = request.session.session_key",
            "const signingKey = SigningKey::generate(&mut OsRng);",
            "encryption_key = derive_key(password, salt)",
            "SECRET_KEY = env(\"DJANGO_SECRET_KEY\")",
            "RAILS_MASTER_KEY=<your master key>",
            "SESSION_KEY: \"user_session\"",
            // Public keys, fingerprints and digests.
            "public key fingerprint 3f9a0c7e1b5d82643f9a0c7e1b5d82643f9a0c7e1b5d82643f9a0c7e1b5d8264",
            "public_key: 3f9a0c7e1b5d82643f9a0c7e1b5d82643f9a0c7e1b5d82643f9a0c7e1b5d8264",
            "signing key fingerprint: 3f9a0c7e1b5d82643f9a0c7e1b5d82643f9a0c7e1b5d82643f9a0c7e1b5d8264",
            "the host key fingerprint is SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8",
            "---- BEGIN SSH2 PUBLIC KEY ----",
            "certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMvakNDQWVhZ0F3SUJBZ0lCQURBTkJna3Foa2lHOXcwQkFRc0ZBREFWTVJNd0VRWURWUVFERXdwcmRXSmwK",
            // Commands without a credential in them.
            "psql --no-password mydb",
            "docker login --password-stdin",
            "mysql -u root -p mydb",
            "curl -u \"$USER:$PASS\" https://api.example.com",
            "git push --force-with-lease origin main",
            "localhost:5432:*:postgres:$PGPASS",
            "2001:db8:85a3:0:0:8a2e:370:7334",
            // Vendor names beside values that are not credentials.
            "SENTRY_RELEASE=2024.01.15-build1234",
            "twitter handle: @ctxkit_dev2024",
            // Sentences of common words are not seed phrases.
            "abandon the old plan and move all staff to the new office building near the river",
            "long long long long long long long long long long long long long long",
            "we will review every open issue after lunch and then decide which one to fix first",
        ] {
            assert_eq!(find_secret(text), None, "false positive on {text:?}");
            assert_eq!(redact(text), text);
        }
    }

    #[test]
    fn invisible_and_full_width_characters_do_not_hide_a_secret() {
        let zero_width = format!("token gh\u{200b}p_{}", r(36));
        let found = find_secret(&zero_width).expect("zero-width space");
        // A token glued to the word before it.
        for glued in [format!("xghp_{}", r(36)), format!("Preghp_{}", r(36))] {
            assert!(find_secret(&glued).is_some(), "{glued}");
        }
        assert_eq!(found.rule, "github-token");
        let joiner = format!("AKIA\u{2060}{}\u{feff}", "IOSFODNN7EXAMPLE");
        assert_eq!(find_secret(&joiner).unwrap().rule, "aws-access-key-id");
        // Full-width letters, digits and underscore fold to ASCII under NFKC.
        let wide: String = format!("ghp_{}", r(36))
            .chars()
            .map(|c| char::from_u32(c as u32 - 0x21 + 0xff01).unwrap())
            .collect();
        assert_eq!(find_secret(&wide).unwrap().rule, "github-token");
        // Redaction removes the whole original span, invisible characters included.
        let red = redact(&format!("keep {zero_width} this"));
        assert_eq!(red, "keep token [REDACTED:github-token] this");
        let red = redact(&format!("a {wide} b"));
        assert_eq!(red, "a [REDACTED:github-token] b");
    }

    #[test]
    fn a_private_key_is_redacted_with_its_body() {
        let block = format!(
            "-----BEGIN RSA {k}-----\nMIIEowIBAAKCAQEA7b\nx9Qz\n-----END RSA {k}-----",
            k = "PRIVATE KEY"
        );
        assert_eq!(
            redact(&format!("key:\n{block}\nthanks")),
            "key:\n[REDACTED:pem-private-key]\nthanks"
        );
        let cut = format!("-----BEGIN {}-----MIIEowIBAAKCAQEA", "PRIVATE KEY");
        assert_eq!(redact(&format!("a {cut}")), "a [REDACTED:pem-private-key]");
    }

    #[test]
    fn long_hostile_text_is_redacted_completely() {
        // Long runs that almost match many rules. Every rule is a `regex` (finite automata, no
        // backtracking), so the check is linear in the text; its speed on this text is
        // measured by `cargo bench -p ctxkit-secrets --bench secrets`.
        let text = format!(
            "{} {} {}",
            "password ".repeat(20_000),
            "aws ".repeat(20_000),
            "A".repeat(100_000)
        );
        // The run of `A`s is what a Twitter bearer token looks like; the near misses are not.
        assert!(find_secret(&text).is_some());
        let redacted = redact(&text);
        assert_eq!(find_secret(&redacted).map(|f| f.rule), None);
        assert!(
            redacted.starts_with(&"password ".repeat(20_000)),
            "near misses are kept"
        );
        assert!(redacted.contains(&"aws ".repeat(20_000)));
    }
}

/// The keywords a pattern implies, derived from its syntax tree: the literal pieces every match
/// must hold. Parsed without Unicode, so `(?i)k` is `[Kk]`; the Unicode pattern also matches `K`
/// (Kelvin) and `ſ` for `k` and `s`, which NFKC folds to ASCII, so the folded copy a text is
/// also checked in holds the keyword.
#[cfg(test)]
mod keywords_of_patterns {
    use super::*;
    use regex_syntax::hir::{Class, Hir, HirKind};
    use std::collections::BTreeSet;

    /// The most strings an exact set is let grow to.
    const MAX_EXACT: usize = 64;

    /// The characters (ASCII case folded) a small class matches: at most eight.
    fn class_chars(class: &Class) -> Option<BTreeSet<String>> {
        let chars: Vec<char> = match class {
            Class::Bytes(c) => {
                let n: usize = c
                    .ranges()
                    .iter()
                    .map(|r| usize::from(r.end() - r.start()) + 1)
                    .sum();
                if n > 8 {
                    return None;
                }
                c.ranges()
                    .iter()
                    .flat_map(|r| r.start()..=r.end())
                    .map(char::from)
                    .collect()
            }
            Class::Unicode(c) => {
                let n: u32 = c
                    .ranges()
                    .iter()
                    .map(|r| r.end() as u32 - r.start() as u32 + 1)
                    .sum();
                if n > 8 {
                    return None;
                }
                c.ranges().iter().flat_map(|r| r.start()..=r.end()).collect()
            }
        };
        let set: BTreeSet<String> = chars.iter().map(|c| c.to_ascii_lowercase().to_string()).collect();
        (chars.iter().all(char::is_ascii) && set.len() <= 8).then_some(set)
    }

    fn product(a: &BTreeSet<String>, b: &BTreeSet<String>) -> Option<BTreeSet<String>> {
        (a.len() * b.len() <= MAX_EXACT).then(|| {
            a.iter()
                .flat_map(|x| b.iter().map(move |y| format!("{x}{y}")))
                .collect()
        })
    }

    /// Every string `hir` can match (ASCII case folded), when they are few.
    fn exact(hir: &Hir) -> Option<BTreeSet<String>> {
        match hir.kind() {
            HirKind::Literal(l) => Some(BTreeSet::from([
                String::from_utf8_lossy(&l.0).to_ascii_lowercase()
            ])),
            HirKind::Class(c) => class_chars(c),
            HirKind::Capture(c) => exact(&c.sub),
            HirKind::Repetition(r) if Some(r.min) == r.max && r.min <= 32 => {
                let one = exact(&r.sub)?;
                (0..r.min).try_fold(BTreeSet::from([String::new()]), |acc, _| product(&acc, &one))
            }
            HirKind::Concat(subs) => subs.iter().try_fold(BTreeSet::from([String::new()]), |acc, s| {
                product(&acc, &exact(s)?)
            }),
            HirKind::Alternation(subs) => {
                let mut all = BTreeSet::new();
                for s in subs {
                    all.extend(exact(s)?);
                }
                (all.len() <= MAX_EXACT).then_some(all)
            }
            _ => None,
        }
    }

    /// How useful a set is as a filter: its shortest string (up to four), then fewer strings.
    fn strength(set: &BTreeSet<String>) -> (usize, std::cmp::Reverse<usize>) {
        (
            set.iter().map(String::len).min().unwrap_or(0).min(4),
            std::cmp::Reverse(set.len()),
        )
    }

    /// Strings one of which every match of `hir` holds (ASCII case folded); `None` when there
    /// are none to find.
    fn needed(hir: &Hir) -> Option<BTreeSet<String>> {
        let found = match hir.kind() {
            HirKind::Literal(_) | HirKind::Class(_) => exact(hir),
            HirKind::Capture(c) => needed(&c.sub),
            HirKind::Repetition(r) if r.min == 0 => None,
            HirKind::Repetition(r) => exact(&r.sub)
                .and_then(|one| {
                    (0..r.min.min(32)).try_fold(BTreeSet::from([String::new()]), |acc, _| product(&acc, &one))
                })
                .or_else(|| needed(&r.sub)),
            HirKind::Alternation(subs) => {
                let mut all = BTreeSet::new();
                for s in subs {
                    all.extend(needed(s)?);
                }
                Some(all)
            }
            HirKind::Concat(subs) => {
                // Runs of exactly known pieces multiplied out, and each other piece's own set:
                // the strongest of them.
                let mut options: Vec<BTreeSet<String>> = Vec::new();
                let mut run: Option<BTreeSet<String>> = None;
                for s in subs {
                    let joined = exact(s).and_then(|e| match &run {
                        None => Some(e),
                        Some(r) => product(r, &e),
                    });
                    match joined {
                        Some(j) => run = Some(j),
                        None => {
                            options.extend(run.take());
                            // An exact piece too big to join starts a run of its own.
                            run = exact(s);
                            if run.is_none() {
                                options.extend(needed(s));
                            }
                        }
                    }
                }
                options.extend(run);
                options.into_iter().max_by_key(strength)
            }
            _ => None,
        }?;
        // A string holding another of the set adds nothing.
        let minimal: BTreeSet<String> = found
            .iter()
            .filter(|s| !found.iter().any(|o| o != *s && s.contains(o.as_str())))
            .cloned()
            .collect();
        (!minimal.is_empty() && minimal.iter().all(|s| !s.is_empty())).then_some(minimal)
    }

    fn keywords(pattern: &str) -> Vec<String> {
        let hir = regex_syntax::ParserBuilder::new()
            .unicode(false)
            .utf8(false)
            .build()
            .parse(pattern)
            .expect("a rule parses");
        needed(&hir).map(|s| s.into_iter().collect()).unwrap_or_default()
    }

    #[test]
    fn keywords_are_what_every_match_holds() {
        assert_eq!(keywords(r"(?i)\bpass(?:word|wd)?\b"), ["pass"]);
        assert_eq!(keywords(r"\bgh[pu]_[a-z]{36}"), ["ghp_", "ghu_"]);
        assert_eq!(
            keywords(r"(?:sk|rk)_(?:live|test)_"),
            ["rk_live_", "rk_test_", "sk_live_", "sk_test_"]
        );
        // The strongest piece of a sequence; an optional piece holds nothing.
        assert_eq!(keywords(r"x[0-9]{4}\.secret"), [".secret"]);
        assert_eq!(keywords(r"(?:token)?[a-f0-9]{40}"), Vec::<String>::new());
        // Every branch must hold one.
        assert_eq!(keywords(r"api_key|[0-9]+"), Vec::<String>::new());
        assert_eq!(keywords(r"A{22}[a-z]+"), ["a".repeat(22)]);
    }

    /// Every rule's keywords are the ones its pattern implies: a pattern edited without its
    /// keywords would let a secret through unchecked.
    #[test]
    fn each_rule_carries_the_keywords_of_its_pattern() {
        for (rule, pattern) in RULES.iter().zip(&compiled().patterns) {
            let carried: Vec<&str> = rule.keywords.to_vec();
            assert_eq!(carried, keywords(pattern), "the keywords of {}", rule.name);
        }
    }
}

/// The public type can cross threads (a compile-time check).
const _: () = {
    fn assert_send_sync<T: Send + Sync>() {}
    let _ = assert_send_sync::<SecretFinding>;
};
