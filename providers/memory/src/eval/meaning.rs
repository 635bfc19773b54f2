//! Retrieval by meaning, measured: with a sentence-embedding model, the set is scored three
//! ways — the store's lexical ranking (no model), cosine of the vectors alone, and the store's
//! hybrid ranking (`OpenOptions::embeddings`) — on the queries the blend was tuned on (the
//! odd-numbered ones) and on the held-out rest.

use std::path::Path;
use std::sync::Arc;

use ctxkit_embed::{cosine, Embedder};
use serde::Serialize;

use super::{EvalSet, Judge, Loaded, Scores, Tally, RANKED};
use crate::error::Result;
use crate::options::{OpenOptions, SearchIndex};
use crate::sqlite::MemoryDb;
use crate::types::MemorySearchRequest;
use crate::vectors::Blend;

/// The three rankings' scores on one group of queries.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Systems {
    /// The store without a model: TF-IDF, keywords, importance, recency.
    pub lexical: Scores,
    /// Cosine of the sentence vectors alone (current memories of the query's project).
    pub semantic: Scores,
    /// The store with the model: the lexical score and the cosine blended.
    pub hybrid: Scores,
}

/// The result of [`EvalSet::run_meaning`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MeaningReport {
    /// The model's identity ([`Embedder::id`]).
    pub model: String,
    /// The blend's weight of the cosine.
    pub weight: f32,
    /// The cosine below which a memory sharing no word with the query is left out.
    pub floor: f32,
    /// The odd-numbered queries, which the shipped blend was chosen on.
    pub tuning: Systems,
    /// The even-numbered queries, which it was not.
    pub held_out: Systems,
    /// Every query.
    pub all: Systems,
}

/// One blend tried by [`EvalSet::tune`], with the hybrid's scores on the tuning queries.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TunePoint {
    /// The cosine's weight.
    pub weight: f32,
    /// The cosine floor.
    pub floor: f32,
    /// The hybrid ranking on the odd-numbered queries.
    pub tuning: Scores,
}

/// Which group a query (0-based position in the set) belongs to: the first, third, … tune.
fn tunes(position: usize) -> bool {
    position.is_multiple_of(2)
}

impl EvalSet {
    /// Score the lexical, semantic and hybrid rankings with `model`, loading the set into two
    /// new stores in `dir` (which must not hold them yet).
    pub fn run_meaning(&self, dir: &Path, model: Arc<Embedder>) -> Result<MeaningReport> {
        let blend = Blend::default();
        let lexical = self.load_into(
            &dir.join("lexical.db"),
            OpenOptions::default().search_index(SearchIndex::Off),
        )?;
        let hybrid = self.load_into(
            &dir.join("hybrid.db"),
            OpenOptions::default().embeddings(model.clone()),
        )?;
        let vectors = model.embed_batch(
            &self
                .memories
                .iter()
                .map(|m| m.content.as_str())
                .collect::<Vec<_>>(),
        );
        let (mut tuning, mut held_out, mut all) = (
            [Tally::default(), Tally::default(), Tally::default()],
            [Tally::default(), Tally::default(), Tally::default()],
            [Tally::default(), Tally::default(), Tally::default()],
        );
        let project_of = self.project_of();
        for (position, q) in self.queries.iter().enumerate() {
            let request = request(q);
            let query_vector = model.embed(&q.text);
            let mut by_cosine: Vec<(f32, &str)> = self
                .memories
                .iter()
                .zip(&vectors)
                .filter(|(m, _)| m.project == q.project && !hybrid.superseded.contains(m.id.as_str()))
                .map(|(m, v)| (cosine(&query_vector, v), m.id.as_str()))
                .collect();
            by_cosine.sort_by(|a, b| b.0.total_cmp(&a.0));
            let ranked = [
                lexical.search(&request)?,
                by_cosine.iter().take(RANKED).map(|(_, id)| *id).collect(),
                hybrid.search(&request)?,
            ];
            let judge = Judge {
                query: q,
                superseded: &hybrid.superseded,
                project_of: &project_of,
            };
            let group = if tunes(position) {
                &mut tuning
            } else {
                &mut held_out
            };
            for ((g, a), r) in group.iter_mut().zip(all.iter_mut()).zip(&ranked) {
                g.add(&judge, r);
                a.add(&judge, r);
            }
        }
        let tuned = self.queries.iter().enumerate().filter(|(i, _)| tunes(*i)).count();
        let systems = |t: &[Tally; 3], n: usize| Systems {
            lexical: t[0].scores(n),
            semantic: t[1].scores(n),
            hybrid: t[2].scores(n),
        };
        Ok(MeaningReport {
            model: model.id().to_owned(),
            weight: blend.weight,
            floor: blend.floor,
            tuning: systems(&tuning, tuned),
            held_out: systems(&held_out, self.queries.len() - tuned),
            all: systems(&all, self.queries.len()),
        })
    }

    /// Try every blend of a grid (weights 0.30-0.95, floors 0.00-0.50, steps of 0.05) on the
    /// odd-numbered queries only, best first by recall@5 + MRR: how the shipped blend was
    /// chosen. The set is loaded once into a new store in `dir`.
    pub fn tune(&self, dir: &Path, model: Arc<Embedder>) -> Result<Vec<TunePoint>> {
        let base = OpenOptions::default().embeddings(model);
        let path = dir.join("tune.db");
        let mut loaded: Loaded<'_> = self.load_into(&path, base.clone())?;
        let project_of = self.project_of();
        let mut points = Vec::new();
        for w in 6..=19 {
            for f in 0..=10 {
                let blend = Blend {
                    weight: w as f32 * 0.05,
                    floor: f as f32 * 0.05,
                };
                let mut options = base.clone();
                if let Some(semantic) = options.semantic.as_mut() {
                    semantic.blend = blend;
                }
                loaded.db = MemoryDb::open_with(&path, options)?;
                let mut tally = Tally::default();
                let mut n = 0;
                for (_, q) in self.queries.iter().enumerate().filter(|(i, _)| tunes(*i)) {
                    let judge = Judge {
                        query: q,
                        superseded: &loaded.superseded,
                        project_of: &project_of,
                    };
                    tally.add(&judge, &loaded.search(&request(q))?);
                    n += 1;
                }
                points.push(TunePoint {
                    weight: blend.weight,
                    floor: blend.floor,
                    tuning: tally.scores(n),
                });
            }
        }
        points.sort_by(|a, b| {
            let score = |p: &TunePoint| p.tuning.recall_at_5 + p.tuning.mrr;
            score(b).total_cmp(&score(a))
        });
        Ok(points)
    }
}

fn request(q: &super::EvalQuery) -> MemorySearchRequest {
    MemorySearchRequest::new(&q.project, &q.text)
        .top_k(RANKED)
        .min_importance(0.0)
        .without_touch()
}
