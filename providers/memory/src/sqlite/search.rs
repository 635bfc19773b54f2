//! Reads and search: get, list, count, search (candidates from the postings or the in-memory index,
//! then ranking), warm-up and stats.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use rusqlite::{params, Connection, Transaction, TransactionBehavior};

use super::rows::select_candidates;
use super::writer::run_now;
use super::{index, json_array, memindex, MemoryDb};
use crate::error::Result;
use crate::options::SearchIndex;
use crate::postings::CandidateRow;
use crate::search::{self, ByMeaning, Query, Snapshot};
use crate::sketches;
use crate::types::*;
use crate::vectors::{QueryVector, Stored};

/// At most this many projects keep an in-memory index.
const MAX_INDEXED_PROJECTS: usize = 8;

impl MemoryDb {
    /// The current memories of a project relevant to a query, best first.
    ///
    /// Candidates come from the project's in-memory index when there is one (caught up with
    /// the latest writes first), else from the impact-ordered postings (the query's rarest
    /// terms, at most [`OpenOptions::candidate_limit`] memories); each is scored with
    /// [`compute_relevance_score`](crate::retrieval::compute_relevance_score) and only those
    /// with a cosine or keyword overlap above zero are kept. Superseded memories are never
    /// returned.
    ///
    /// [`OpenOptions::candidate_limit`]: super::OpenOptions::candidate_limit
    pub(super) fn rank(&self, query: Query) -> Result<Vec<MemorySearchResult>> {
        self.read(|tx| {
            if query.vector.is_none() {
                let (filter, terms) = (query.filter(), &query.terms);
                let indexed = self.with_index(tx, &query.project, |ix| {
                    ix.search(
                        tx,
                        terms,
                        filter.min_importance,
                        filter.categories,
                        query.now,
                        query.top_k,
                    )
                })?;
                if let Some(hits) = indexed {
                    return Ok(hits);
                }
            }
            run_now(search::search(tx, &self.inner.options, query))
        })
    }

    /// Run `f` on the project's in-memory index brought to the version `tx` sees: caught up in
    /// place from the change log, or built (now with [`SearchIndex::Eager`], on a background
    /// thread with [`SearchIndex::Background`]). `None` when there is no index to use: the
    /// caller reads the on-disk postings instead.
    pub(super) fn with_index<T>(
        &self,
        tx: &Transaction,
        project: &str,
        f: impl FnOnce(&memindex::ProjectIndex) -> Result<T>,
    ) -> Result<Option<T>> {
        let version = index::project_version(tx, project)?;
        let mode = self.inner.options.index_mode();
        let cached = lock(&self.inner.indexes).get(project).cloned();
        let Some(ix) = cached else {
            return match mode {
                SearchIndex::Eager => {
                    let ix = self.install_index(tx, project, version)?;
                    let guard = ix.read().unwrap_or_else(|p| p.into_inner());
                    f(&guard).map(Some)
                }
                SearchIndex::Background => {
                    self.build_index_in_background(project);
                    Ok(None)
                }
                SearchIndex::Off => Ok(None),
            };
        };
        {
            let guard = ix.read().unwrap_or_else(|p| p.into_inner());
            if guard.version == version {
                return f(&guard).map(Some);
            }
        }
        let mut guard = ix.write().unwrap_or_else(|p| p.into_inner());
        if guard.version.0 < version.0
            && !guard.catch_up(tx, project, version, self.inner.options.worn_slack)?
        {
            // The log no longer covers the gap (or the counts disagree): start over.
            if mode == SearchIndex::Background {
                drop(guard);
                lock(&self.inner.indexes).remove(project);
                self.build_index_in_background(project);
                return Ok(None);
            }
            *guard = memindex::ProjectIndex::build(tx, project, version)?;
        }
        if guard.version == version {
            f(&guard).map(Some)
        } else {
            // Another search caught the index up past this transaction's snapshot.
            Ok(None)
        }
    }

    /// Build the in-memory index of `project` as of `tx` and keep it.
    fn install_index(
        &self,
        tx: &Transaction,
        project: &str,
        version: index::Version,
    ) -> Result<Arc<RwLock<memindex::ProjectIndex>>> {
        let built = memindex::ProjectIndex::build(tx, project, version)?;
        tracing::debug!(
            project,
            docs = version.1,
            bytes = built.weight(),
            "memory search index built"
        );
        let ix = Arc::new(RwLock::new(built));
        let mut indexes = lock(&self.inner.indexes);
        if indexes.len() >= MAX_INDEXED_PROJECTS && !indexes.contains_key(project) {
            indexes.clear();
        }
        indexes.insert(project.to_string(), ix.clone());
        Ok(ix)
    }

    fn build_index_in_background(&self, project: &str) {
        if !lock(&self.inner.building).insert(project.to_string()) {
            return;
        }
        let db = self.clone();
        let owned = project.to_string();
        let spawned = std::thread::Builder::new()
            .name("ctxkit-memory-index".into())
            .spawn(move || {
                let built = db.read(|tx| {
                    let version = index::project_version(tx, &owned)?;
                    db.install_index(tx, &owned, version).map(|_| ())
                });
                if let Err(e) = built {
                    tracing::warn!(project = owned, error = %e, "building the memory search index failed");
                }
                lock(&db.inner.building).remove(&owned);
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start the memory index thread");
            lock(&self.inner.building).remove(project);
        }
    }

    /// Bring every loaded in-memory index up to the database in place, right after a write
    /// committed, so a write leaves the indexes current instead of a log for the next search.
    /// An index the log no longer covers is dropped (the next search rebuilds it). The write
    /// is already committed, so a failure here only drops the indexes.
    pub(super) fn refresh_indexes(&self, conn: &mut Connection) {
        let loaded: Vec<(String, Arc<RwLock<memindex::ProjectIndex>>)> = lock(&self.inner.indexes)
            .iter()
            .map(|(project, ix)| (project.clone(), ix.clone()))
            .collect();
        if loaded.is_empty() {
            return;
        }
        let refreshed = (|| -> Result<()> {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
            for (project, ix) in loaded {
                let version = index::project_version(&tx, &project)?;
                let mut guard = ix.write().unwrap_or_else(|p| p.into_inner());
                if !(guard.version.0 <= version.0
                    && guard.catch_up(&tx, &project, version, self.inner.options.worn_slack)?)
                {
                    lock(&self.inner.indexes).remove(&project);
                }
            }
            Ok(())
        })();
        if let Err(error) = refreshed {
            tracing::warn!(%error, "in-memory search indexes dropped after a write; the next search rebuilds them");
            lock(&self.inner.indexes).clear();
        }
    }

    /// Bring the in-memory search index of a project up to date now (catching up with recent
    /// writes, or building it), whatever [`SearchIndex`] says, so the next search is fast.
    pub(crate) fn warm_up(&self, project: &str) -> Result<()> {
        self.read(|tx| {
            let version = index::project_version(tx, project)?;
            let cached = lock(&self.inner.indexes).get(project).cloned();
            if let Some(ix) = cached {
                let mut guard = ix.write().unwrap_or_else(|p| p.into_inner());
                if guard.version.0 <= version.0
                    && guard.catch_up(tx, project, version, self.inner.options.worn_slack)?
                {
                    return Ok(());
                }
            }
            self.install_index(tx, project, version).map(|_| ())
        })
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A transaction as a search sees it.
impl Snapshot for Transaction<'_> {
    async fn docs(&self, project: &str) -> Result<i64> {
        Ok(index::project_version(self, project)?.1)
    }

    async fn frequencies(&self, project: &str, terms: &[&str]) -> Result<HashMap<String, u32>> {
        index::frequencies(self, project, terms)
    }

    async fn postings(&self, project: i64, terms: &[&str], per_term: i64) -> Result<Vec<Vec<(i64, i64)>>> {
        let mut read = self.prepare_cached(
            "SELECT num, impact FROM memory_postings WHERE project = ?1 AND term = ?2
             ORDER BY impact DESC, num LIMIT ?3",
        )?;
        let mut lists = Vec::new();
        for term in terms {
            let list = read.query_map(params![project, term, per_term], |r| Ok((r.get(0)?, r.get(1)?)))?;
            lists.push(list.collect::<rusqlite::Result<_>>()?);
        }
        Ok(lists)
    }

    async fn candidate_rows(&self, nums: &[i64]) -> Result<Vec<CandidateRow>> {
        select_candidates(self, nums)
    }

    /// Read through the vectors' covering index, a seek each.
    async fn vectors(&self, of: ByMeaning<'_>, nums: &[i64], stored: &mut Stored) -> Result<()> {
        let mut stmt = self.prepare_cached(
            "SELECT num, embedding FROM project_memories
             WHERE project_path = ?1 AND embedding_model = ?2 AND superseded_by IS NULL AND embedding IS NOT NULL
               AND num IN (SELECT value FROM json_each(?3))",
        )?;
        let mut rows = stmt.query(params![of.project, of.model, json_array(nums)])?;
        while let Some(row) = rows.next()? {
            // A value that is not a blob is a damaged row, left out like a damaged vector.
            if let Ok(vector) = row.get_ref(1)?.as_blob() {
                stored.push(row.get(0)?, vector);
            }
        }
        Ok(())
    }

    /// The sketches are scored on a second thread as they are read.
    async fn first_pass(
        &self,
        of: ByMeaning<'_>,
        query: &mut QueryVector,
        except: &[i64],
    ) -> Result<Vec<i64>> {
        sketches::first_pass(of.limit, except, query, |offer| {
            let mut stmt = self.prepare_cached(
                "SELECT pack, slots, sketches FROM memory_sketches WHERE project_path = ?1 AND embedding_model = ?2",
            )?;
            let mut rows = stmt.query(params![of.project, of.model])?;
            while let Some(row) = rows.next()? {
                let blob = |i| {
                    row.get_ref(i)
                        .and_then(|v| v.as_blob().map_err(rusqlite::Error::from))
                };
                offer(row.get(0)?, blob(1)?, blob(2)?);
            }
            Ok(())
        })
    }

    async fn query_vector<'q>(&self, query: &'q mut QueryVector) -> Result<&'q [f32]> {
        query.wait()
    }
}
