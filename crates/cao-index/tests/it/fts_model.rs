//! Property: after any sequence of upserts (new and overwriting), deletes and scope clears, both FTS tables answer
//! exactly as a naive in-memory model of the rows does: the two-field lexical document (content; key, stored day and
//! the neighbouring memories' content as context), our BM25 with the default parameters, a match only through the
//! row's own text (content, key, day), and substring search.

use crate::common::*;
use cao_core::lexical::{CorpusStats, LexicalScorer, TermInDoc};
use cao_core::{MemoryType, Scope};
use cao_index::{Index, Visibility};
use cao_rank::Bm25;
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

const WORDS: [&str; 8] = [
    "Alpha", "beta", "GAMMA", "delta-x", "epsilon", "zeta_9", "eta", "Theta!",
];
const KEYS: [&str; 5] = ["k-one", "k-two", "k-three", "k-four", "k-five"];
const SESSIONS: [&str; 2] = ["s1", "s2"];

#[derive(Debug, Clone)]
enum Op {
    Upsert {
        key: usize,
        session: Option<usize>,
        words: Vec<usize>,
        ty: usize,
    },
    Delete {
        key: usize,
        session: Option<usize>,
    },
    ClearSession(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let session = proptest::option::of(0..SESSIONS.len());
    prop_oneof![
        4 => (0..KEYS.len(), session.clone(), proptest::collection::vec(0..WORDS.len(), 0..6), 0..2usize)
            .prop_map(|(key, session, words, ty)| Op::Upsert { key, session, words, ty }),
        2 => (0..KEYS.len(), session).prop_map(|(key, session)| Op::Delete { key, session }),
        1 => (0..SESSIONS.len()).prop_map(Op::ClearSession),
    ]
}

/// A model row's identity: (key index, session index).
type ModelId = (usize, Option<usize>);
/// A model row: (content, updated_at seconds, memory type, created_at seconds).
type ModelRow = (String, i64, MemoryType, i64);
/// Identity -> row.
type Model = BTreeMap<ModelId, ModelRow>;

/// `(key, scope_id)` of a row.
type Id = (String, Option<String>);

fn model_id(k: usize, s: Option<usize>) -> Id {
    (KEYS[k].to_owned(), s.map(|s| SESSIONS[s].to_owned()))
}

/// The model rows visible under `vis` (of type `ty` when given).
fn visible(model: &Model, vis: &Visibility, ty: Option<MemoryType>) -> Model {
    model
        .iter()
        .filter(|((_, s), (_, _, t, _))| {
            let (scope, sid) = scope_of(*s);
            vis.allows(scope, sid) && ty.is_none_or(|ty| ty == *t)
        })
        .map(|(k, v)| (*k, v.clone()))
        .collect()
}

fn scope_of(session: Option<usize>) -> (Scope, Option<&'static str>) {
    match session {
        Some(s) => (Scope::Session, Some(SESSIONS[s])),
        None => (Scope::Global, None),
    }
}

fn tokens(text: &str) -> BTreeSet<String> {
    cao_core::text::index_terms(text).collect()
}

/// The searchable text of a model row for substring search, as the index builds it (key, empty tags, content).
fn doc(key: usize, content: &str) -> String {
    format!("{}  {}", KEYS[key], content)
}

/// The own context terms of a row with key `key` stored at `t0 + secs`: key, (no tags), the stored day.
fn meta_terms(key: usize, secs: i64) -> Vec<String> {
    let day = at(secs).format("%-d %B %Y").to_string();
    cao_core::text::index_terms(KEYS[key])
        .chain(cao_core::text::index_terms(&day))
        .collect()
}

/// The context-field terms of a row with key `key` stored at `t0 + secs` between memories with contents
/// `neighbours`: key, (no tags), the stored day, and each neighbour's first terms.
fn context_terms(key: usize, secs: i64, neighbours: &[String]) -> Vec<String> {
    meta_terms(key, secs)
        .into_iter()
        .chain(
            neighbours
                .iter()
                .flat_map(|n| cao_core::text::index_terms(n).take(cao_index::NEIGHBOUR_TERMS_MAX)),
        )
        .collect()
}

/// One document of a model corpus: content terms, context terms, and the own part of the context (key, day).
type Fields = (Vec<String>, Vec<String>, Vec<String>);

/// Our BM25F with the default parameters (k1 = 1.2, b = 0.1, context weight 0.4) of `term` in every document of
/// `docs` that scores it (in either field: a row matching another query term on its own gets this term's context
/// contribution too), written out from the formula: a drift of the row count, the field totals or a document
/// frequency shows up as a different score. [`owns`] tells whether the row can match the term itself.
fn model_scores(docs: &[Fields], term: &str) -> Vec<Option<f64>> {
    let (k1, b, w) = (1.2, 0.1, [1.0, 0.4]);
    let n = docs.len() as f64;
    let avg = [
        docs.iter().map(|d| d.0.len()).sum::<usize>() as f64 / n,
        docs.iter().map(|d| d.1.len()).sum::<usize>() as f64 / n,
    ];
    let has = |v: &Vec<String>| v.iter().any(|x| x == term);
    let df = docs.iter().filter(|d| has(&d.0) || has(&d.1)).count() as f64;
    let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
    docs.iter()
        .map(|d| {
            let mut x = 0.0;
            for (f, field) in [&d.0, &d.1].into_iter().enumerate() {
                let tf = field.iter().filter(|x| *x == term).count() as f64;
                if tf > 0.0 {
                    let rel = if avg[f] > 0.0 { field.len() as f64 / avg[f] } else { 1.0 };
                    x += w[f] * tf / (1.0 - b + b * rel);
                }
            }
            (x > 0.0).then_some(idf * x * (k1 + 1.0) / (x + k1))
        })
        .collect()
}

/// The context-field terms of the model row `id`: its neighbours are the [`cao_index::NEIGHBOUR_WINDOW`] rows of the
/// same scope id created just before it and the ones created just after it (created seconds, then key).
fn model_context(model: &Model, id: &(usize, Option<usize>)) -> Vec<String> {
    let (_, updated, _, created) = &model[id];
    let me = (*created, KEYS[id.0]);
    let same = || model.iter().filter(|((_, s), _)| *s == id.1);
    let order = |(k, c): (&ModelId, &ModelRow)| (c.3, KEYS[k.0]);
    let mut stream: Vec<_> = same().map(|r| (order(r), r.1.0.clone())).collect();
    stream.sort();
    let Some(p) = stream.iter().position(|(o, _)| *o == me) else {
        return context_terms(id.0, *updated, &[]);
    };
    let w = cao_index::NEIGHBOUR_WINDOW;
    let before = (1..=w).filter_map(|d| p.checked_sub(d)).map(|q| stream[q].1.clone());
    let after = (1..=w).filter_map(|d| stream.get(p + d)).map(|x| x.1.clone());
    let around: Vec<String> = before.chain(after).collect();
    context_terms(id.0, *updated, &around)
}

/// Both fields of every model row, in model order.
fn model_fields(model: &Model) -> Vec<Fields> {
    model
        .iter()
        .map(|(id, (c, updated, _, _))| {
            (
                cao_core::text::index_terms(c).collect(),
                model_context(model, id),
                meta_terms(id.0, *updated),
            )
        })
        .collect()
}

/// Whether `term` is in the own text of a model document (content, key, day): whether the row matches it.
fn owns(d: &Fields, term: &str) -> bool {
    d.0.iter().chain(&d.2).any(|x| x == term)
}

/// [`model_scores`] over the whole model, by identity (rows that match the term on their own only).
fn model_bm25(model: &Model, token: &str) -> BTreeMap<Id, f64> {
    model_bm25_raw(model, token)
        .into_iter()
        .filter(|(_, (_, own))| *own)
        .map(|(id, (s, _))| (id, s))
        .collect()
}

/// [`model_scores`] over the whole model, by identity: every row that scores the term, and whether it [`owns`] it.
fn model_bm25_raw(model: &Model, token: &str) -> BTreeMap<Id, (f64, bool)> {
    let ids: Vec<Id> = model.keys().map(|(k, s)| model_id(*k, *s)).collect();
    let docs = model_fields(model);
    ids.into_iter()
        .zip(model_scores(&docs, token))
        .zip(docs.iter().map(|d| owns(d, token)))
        .filter_map(|((id, s), own)| s.map(|s| (id, (s, own))))
        .collect()
}

/// The fields of global documents `(key, content)` stored one second apart from `t0` in this order: each one's
/// neighbours are the ones stored just before and after it.
fn sequence_fields(docs: &[(String, String)]) -> Vec<Fields> {
    docs.iter()
        .enumerate()
        .map(|(i, (k, c))| {
            let w = cao_index::NEIGHBOUR_WINDOW;
            let before = (1..=w).filter_map(|d| i.checked_sub(d)).map(|q| docs[q].1.as_str());
            let after = (1..=w).filter_map(|d| docs.get(i + d)).map(|x| x.1.as_str());
            let around: Vec<&str> = before.chain(after).collect();
            let day = at(i64::try_from(i).expect("small")).format("%-d %B %Y").to_string();
            let meta: Vec<String> = cao_core::text::index_terms(k)
                .chain(cao_core::text::index_terms(&day))
                .collect();
            let ctx = meta
                .iter()
                .cloned()
                .chain(
                    around
                        .iter()
                        .flat_map(|n| cao_core::text::index_terms(n).take(cao_index::NEIGHBOUR_TERMS_MAX)),
                )
                .collect();
            (cao_core::text::index_terms(c).collect(), ctx, meta)
        })
        .collect()
}

/// Whether the model row `id` contains `t` in either field.
fn contains(model: &Model, id: &(usize, Option<usize>), t: &str) -> bool {
    tokens(&model[id].0).contains(t) || model_context(model, id).iter().any(|x| x == t)
}

/// Whether the model row `id` contains `t` in its own text (content, key, stored day): whether it can match `t`.
fn contains_own(model: &Model, id: &(usize, Option<usize>), t: &str) -> bool {
    tokens(&model[id].0).contains(t) || meta_terms(id.0, model[id].1).iter().any(|x| x == t)
}

fn apply(ix: &Index, model: &mut Model, ops: &[Op]) {
    for (i, op) in ops.iter().enumerate() {
        let secs = i64::try_from(i).expect("small");
        match op {
            Op::Upsert {
                key,
                session,
                words,
                ty,
            } => {
                let content = words.iter().map(|w| WORDS[*w]).collect::<Vec<_>>().join(" ");
                let (scope, sid) = scope_of(*session);
                let mut r = row(KEYS[*key], scope, sid, &content, secs);
                r.memory_type = MemoryType::ALL[*ty];
                ix.upsert(&r).expect("upsert");
                // An update keeps the first store's created_at.
                let created = model.get(&(*key, *session)).map_or(secs, |(_, _, _, c)| *c);
                model.insert((*key, *session), (content, secs, r.memory_type, created));
            }
            Op::Delete { key, session } => {
                let (scope, sid) = scope_of(*session);
                let existed = ix.delete(scope, sid, &crate::common::key(KEYS[*key])).expect("delete");
                assert_eq!(existed, model.remove(&(*key, *session)).is_some());
            }
            Op::ClearSession(s) => {
                let n = ix.delete_scope(Scope::Session, Some(SESSIONS[*s])).expect("clear");
                let before = model.len();
                model.retain(|(_, sess), _| *sess != Some(*s));
                assert_eq!(n, before - model.len());
            }
        }
    }
}

fn id_set<'a>(it: impl Iterator<Item = &'a cao_index::MemoryRow>) -> BTreeSet<Id> {
    it.map(|r| (r.key.to_string(), r.scope_id.clone())).collect()
}

/// Check every pool against the model for one visibility and type filter. BM25 statistics are corpus-wide, so
/// expected scores come from the whole model while the hit sets come from the visible part.
fn check(
    ix: &Index,
    model: &Model,
    vis: &Visibility,
    ty: Option<MemoryType>,
    two_words: &str,
) -> Result<(), TestCaseError> {
    let seen = visible(model, vis, ty);
    // BM25, one token at a time: the hit set is exactly the visible rows containing the token, with FTS5's score.
    for t in WORDS
        .iter()
        .flat_map(|w| tokens(w))
        .chain(KEYS.iter().flat_map(|k| tokens(k)))
    {
        let hits = ix.bm25_pool(vis, ty, &t, 1000, &Bm25::DEFAULT).expect("bm25");
        let all_scores = model_bm25(model, &t);
        let want: BTreeSet<Id> = all_scores
            .keys()
            .filter(|id| seen.keys().any(|(k, s)| model_id(*k, *s) == **id))
            .cloned()
            .collect();
        prop_assert_eq!(id_set(hits.iter().map(|(r, _)| r)), want, "token {}", t);
        for (r, score) in &hits {
            let expected = all_scores[&(r.key.to_string(), r.scope_id.clone())];
            prop_assert!(
                (score - expected).abs() <= 1e-9 * expected.abs().max(1.0),
                "token {} row {}: {} vs {}",
                t,
                r.key,
                score,
                expected
            );
        }
        let mut sorted = hits.iter().map(|(_, s)| *s).collect::<Vec<_>>();
        sorted.sort_by(|a, b| b.total_cmp(a));
        prop_assert_eq!(sorted, hits.iter().map(|(_, s)| *s).collect::<Vec<_>>(), "best first");
    }

    // BM25, two words: every term present in the corpus is scored.
    let qtoks = tokens(two_words);
    let chosen: Vec<&String> = qtoks
        .iter()
        .filter(|t| model.keys().any(|id| contains(model, id, t)))
        .collect();
    let want: BTreeSet<Id> = seen
        .keys()
        .filter(|id| chosen.iter().any(|t| contains_own(model, id, t)))
        .map(|(k, s)| model_id(*k, *s))
        .collect();
    let hits = ix.bm25_pool(vis, ty, two_words, 1000, &Bm25::DEFAULT).expect("bm25");
    prop_assert_eq!(id_set(hits.iter().map(|(r, _)| r)), want.clone(), "query {}", two_words);
    // The best two (the pruned path may answer these) carry the model's summed scores.
    let per_token: Vec<BTreeMap<Id, (f64, bool)>> = chosen.iter().map(|t| model_bm25_raw(model, t)).collect();
    let full = |id: &Id| per_token.iter().filter_map(|m| m.get(id)).map(|(s, _)| s).sum::<f64>();
    let mut best: Vec<f64> = want.iter().map(full).collect();
    best.sort_by(|a, b| b.total_cmp(a));
    best.truncate(2);
    let top = ix.bm25_pool(vis, ty, two_words, 2, &Bm25::DEFAULT).expect("bm25");
    prop_assert_eq!(top.len(), best.len());
    for ((r, score), expected) in top.iter().zip(&best) {
        prop_assert!(
            (score - expected).abs() <= 1e-9,
            "query {} row {}: {} vs {}",
            two_words,
            r.key,
            score,
            expected
        );
        prop_assert!((score - full(&(r.key.to_string(), r.scope_id.clone()))).abs() <= 1e-9);
    }

    // A scorer that weighs the context 0 gets the same pool, scores included, whether or not the index reads the
    // context columns (it leaves them unread), on recall's budget and on the related pass's (recent pre-selection).
    let content_only = Bm25 {
        context_weight: 0.0,
        ..Bm25::DEFAULT
    };
    let terms = cao_index::search_tokens(two_words);
    for budget in [
        cao_index::PoolBudget::RECALL,
        cao_index::PoolBudget {
            rare_candidates: 1,
            widened_candidates: 1,
            every_term_rows: 0,
            exact_visible_rows: 0,
        },
    ] {
        for limit in [2, 1000] {
            let pool = |scorer: &dyn LexicalScorer| -> Vec<(Id, f64)> {
                ix.bm25_pool_budgeted(vis, ty, &terms, limit, scorer, budget)
                    .expect("bm25")
                    .into_iter()
                    .map(|(r, s)| ((r.key.to_string(), r.scope_id), s))
                    .collect()
            };
            prop_assert_eq!(
                pool(&content_only),
                pool(&ReadsContext(content_only)),
                "query {}",
                two_words
            );
        }
    }

    // Metadata: every term a substring (case-insensitive), newest first.
    for q in [
        "alp",
        "ETA",
        "a",
        "ta",
        "delta-x beta",
        "k-t",
        "zeta_9 ph",
        "!",
        "theta! gamma",
    ] {
        let terms: Vec<String> = q.to_lowercase().split_whitespace().map(str::to_owned).collect();
        let mut want: Vec<(i64, String, Option<String>)> = seen
            .iter()
            .filter(|((k, _), (c, _, _, _))| {
                let hay = doc(*k, c).to_lowercase();
                terms.iter().all(|t| hay.contains(t.as_str()))
            })
            .map(|((k, s), (_, secs, _, _))| (-secs, KEYS[*k].to_owned(), s.map(|s| SESSIONS[s].to_owned())))
            .collect();
        want.sort();
        let got: Vec<(i64, String, Option<String>)> = ix
            .metadata_pool(vis, ty, q, 1000)
            .expect("meta")
            .into_iter()
            .map(|r| (-(r.updated_at - t0()).num_seconds(), r.key.to_string(), r.scope_id))
            .collect();
        prop_assert_eq!(got, want, "metadata query {}", q);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn fts_tables_match_a_naive_model(
        ops in proptest::collection::vec(op(), 1..40),
        q1 in 0..WORDS.len(),
        q2 in 0..WORDS.len(),
    ) {
        let db = TestDb::new();
        let ix = &db.index;
        let mut model = Model::new();
        apply(ix, &mut model, &ops);
        prop_assert_eq!(ix.count().expect("count"), model.len());
        prop_assert_eq!(ix.unindexed_count().expect("unindexed"), 0);
        {
            // Our document frequencies count every field (the neighbours' text too), FTS5's own statistics only
            // the memory's own text (`near` is stored unindexed), and the field totals are the model's.
            let conn = rusqlite::Connection::open(db.path()).expect("raw");
            let read = |sql: &str| -> Vec<(String, i64)> {
                let mut stmt = conn.prepare(sql).expect("prepare");
                stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).expect("query").collect::<Result<_, _>>().expect("rows")
            };
            let fields = model_fields(&model);
            let df_of = |own_only: bool| -> Vec<(String, i64)> {
                let mut df: BTreeMap<String, i64> = BTreeMap::new();
                for d in &fields {
                    let terms: BTreeSet<&String> = if own_only {
                        d.0.iter().chain(&d.2).collect()
                    } else {
                        d.0.iter().chain(&d.1).collect()
                    };
                    for t in terms {
                        *df.entry(t.clone()).or_default() += 1;
                    }
                }
                df.into_iter().collect()
            };
            prop_assert_eq!(read("SELECT term, df FROM cao_search_terms ORDER BY term"), df_of(false));
            prop_assert_eq!(read("SELECT term, doc FROM cao_memory_fts_vocab ORDER BY term"), df_of(true));
            let total: i64 = model.values().map(|(c, _, _, _)| cao_core::text::index_terms(c).count() as i64).sum();
            let context: i64 = model_fields(&model).iter().map(|f| f.1.len() as i64).sum();
            let stats = read("SELECT 'x', tokens FROM cao_search_stats");
            prop_assert_eq!(stats[0].1, total);
            let stats = read("SELECT 'x', context_tokens FROM cao_search_stats");
            prop_assert_eq!(stats[0].1, context);
        }
        let query = format!("{} {}", WORDS[q1], WORDS[q2]);
        let mine = Visibility::none().allow(Scope::Global, None).allow(Scope::Session, Some("s1"));
        let other = Visibility::none().allow(Scope::Session, Some("s2"));
        for vis in [Visibility::all(), mine, other] {
            for ty in [None, Some(MemoryType::User)] {
                check(ix, &model, &vis, ty, &query)?;
            }
        }
    }
}

#[test]
fn rebuilding_the_search_tables_gives_the_same_answers() {
    let db = TestDb::new();
    let ix = &db.index;
    let mut model = Model::new();
    let ops: Vec<Op> = (0..30)
        .map(|i| match i % 4 {
            3 => Op::Delete {
                key: i % KEYS.len(),
                session: None,
            },
            _ => Op::Upsert {
                key: i % KEYS.len(),
                session: (i % 3 == 0).then_some(0),
                words: vec![i % 8, (i * 3) % 8],
                ty: i % 2,
            },
        })
        .collect();
    apply(ix, &mut model, &ops);
    let before: Vec<_> = WORDS
        .iter()
        .map(|w| {
            ix.bm25_pool(&Visibility::all(), None, w, 100, &Bm25::DEFAULT)
                .expect("bm25")
        })
        .collect();
    assert_eq!(ix.rebuild_search_index().expect("rebuild"), model.len());
    let after: Vec<_> = WORDS
        .iter()
        .map(|w| {
            ix.bm25_pool(&Visibility::all(), None, w, 100, &Bm25::DEFAULT)
                .expect("bm25")
        })
        .collect();
    let strip = |v: &Vec<Vec<(cao_index::MemoryRow, f64)>>| -> Vec<Vec<String>> {
        v.iter()
            .map(|hits| {
                hits.iter()
                    .map(|(r, s)| format!("{}/{:?}/{s:.9}", r.key, r.scope_id))
                    .collect()
            })
            .collect()
    };
    assert_eq!(strip(&before), strip(&after));
}

/// A corpus where the rare word alone proves the top results: the pruned path must return FTS5's exact scores.
#[test]
fn pruned_bm25_top_matches_the_full_formula() {
    let db = TestDb::new();
    let ix = &db.index;
    let mut model = Model::new();
    let mut docs: Vec<(String, String)> = Vec::new();
    for i in 0..300usize {
        let mut words = vec!["filler"; 3 + i % 7];
        if i % 25 == 0 {
            words.push("rare");
        }
        if i % 3 == 0 {
            words.push("mid");
        }
        if i % 50 == 0 {
            words.push("mid");
        }
        let key = format!("doc-{i}");
        let content = words.join(" ");
        ix.upsert(&global(&key, &content, i64::try_from(i).expect("small")))
            .expect("upsert");
        docs.push((key, content));
    }
    model.clear();
    // Model scores with the same formula as `model_bm25`, over these documents.
    let fields = sequence_fields(&docs);
    let rare = model_scores(&fields, "rare");
    let mid = model_scores(&fields, "mid");
    let mut expected: Vec<(f64, String)> = docs
        .iter()
        .enumerate()
        .filter(|(i, _)| owns(&fields[*i], "rare") || owns(&fields[*i], "mid"))
        .map(|(i, (k, _))| (rare[i].unwrap_or(0.0) + mid[i].unwrap_or(0.0), k.clone()))
        .collect();
    expected.sort_by(|a, b| b.0.total_cmp(&a.0));
    for limit in [1usize, 5, 12] {
        let got = ix
            .bm25_pool(&Visibility::all(), None, "rare mid", limit, &Bm25::DEFAULT)
            .expect("bm25");
        assert_eq!(got.len(), limit);
        for (i, (r, score)) in got.iter().enumerate() {
            assert!(
                (score - expected[i].0).abs() < 1e-9,
                "rank {i}: {} {score} vs {:?}",
                r.key,
                expected[i]
            );
            let mine = expected.iter().find(|(_, k)| k == r.key.as_str()).expect("a hit").0;
            assert!((score - mine).abs() < 1e-9, "{}: {score} vs {mine}", r.key);
        }
    }
    let all = ix
        .bm25_pool(&Visibility::all(), None, "rare mid", 1000, &Bm25::DEFAULT)
        .expect("bm25");
    assert_eq!(
        all.len(),
        expected.len(),
        "with a large limit every row sharing a token is a hit"
    );
}

/// A frequent token (document frequency above the candidate budget) does not make the pool score every row that
/// has it: the candidates come from the rare token, and each returned score is still the full BM25 score over both
/// tokens (the rare token proves the top here, so the answer is exact).
#[test]
fn frequent_tokens_do_not_widen_the_candidates() {
    let db = TestDb::new();
    let ix = &db.index;
    let mut docs: Vec<(String, String)> = Vec::new();
    for i in 0..2400usize {
        let mut words = vec!["filler"; 2 + i % 5];
        if i % 24 < 11 {
            words.push("common");
        }
        if i % 80 == 0 {
            words.push("rare");
        }
        let key = format!("doc-{i}");
        let content = words.join(" ");
        ix.upsert(&global(&key, &content, i64::try_from(i).expect("small")))
            .expect("upsert");
        docs.push((key, content));
    }
    let fields = sequence_fields(&docs);
    let rare = model_scores(&fields, "rare");
    let common = model_scores(&fields, "common");
    let mut expected: Vec<(f64, String)> = docs
        .iter()
        .enumerate()
        .filter(|(i, _)| owns(&fields[*i], "rare") || owns(&fields[*i], "common"))
        .map(|(i, (k, _))| (rare[i].unwrap_or(0.0) + common[i].unwrap_or(0.0), k.clone()))
        .collect();
    expected.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let got = ix
        .bm25_pool(&Visibility::all(), None, "rare common", 10, &Bm25::DEFAULT)
        .expect("bm25");
    assert_eq!(got.len(), 10);
    for (i, (r, score)) in got.iter().enumerate() {
        assert!(r.content.contains("rare"), "rank {i} ({}) has the rare token", r.key);
        assert!(
            (score - expected[i].0).abs() < 1e-9,
            "rank {i}: {} {score} vs {:?}",
            r.key,
            expected[i]
        );
    }
}

/// `bm25_scores` reports, for any row, exactly the score `bm25_pool` gives it (also for rows the pool's cut left
/// out), and `None` for a row sharing no token with the query; `matches_all_terms` is the metadata predicate.
#[test]
fn bm25_scores_agree_with_the_pool_for_every_row() {
    let db = TestDb::new();
    let ix = &db.index;
    for i in 0..120usize {
        let mut words = vec!["filler"; 2 + i % 5];
        if i % 7 == 0 {
            words.push("kafka");
        }
        if i % 4 == 0 {
            words.push("streams");
        }
        ix.upsert(&global(
            &format!("doc-{i}"),
            &words.join(" "),
            i64::try_from(i).expect("small"),
        ))
        .expect("upsert");
    }
    let query = "kafka streams";
    let pool = ix
        .bm25_pool(&Visibility::all(), None, query, 1000, &Bm25::DEFAULT)
        .expect("bm25");
    assert!(pool.len() > 20, "a pool to compare with");
    let rows: Vec<&cao_index::MemoryRow> = pool.iter().map(|(r, _)| r).collect();
    let scores = ix.bm25_scores(query, &rows, &Bm25::DEFAULT).expect("scores");
    for ((row, expected), got) in pool.iter().zip(&scores) {
        let got = got.expect("every pool row has a score");
        assert!((got - expected).abs() < 1e-9, "{}: {got} vs {expected}", row.key);
    }
    let top = ix
        .bm25_pool(&Visibility::all(), None, query, 3, &Bm25::DEFAULT)
        .expect("bm25");
    let cut: Vec<&cao_index::MemoryRow> = pool[10..12].iter().map(|(r, _)| r).collect();
    let beyond = ix.bm25_scores(query, &cut, &Bm25::DEFAULT).expect("scores");
    assert_eq!(beyond.len(), 2);
    assert!(
        beyond.iter().all(Option::is_some),
        "rows below the pool's cut are scored too"
    );
    assert!(top[0].1 >= beyond[0].expect("score"));
    // doc-2 and its neighbours doc-1 and doc-3 have neither term (doc-0 has both, in doc-1's context).
    let none = global("doc-2", "filler filler filler filler", 2);
    let plain = ix.find_key(&Visibility::all(), &none.key).expect("find").expect("row");
    assert_eq!(
        ix.bm25_scores(query, &[&plain], &Bm25::DEFAULT).expect("scores"),
        [None]
    );
    for (row, _) in &pool {
        let both = row.content.contains("kafka") && row.content.contains("streams");
        assert_eq!(cao_index::matches_all_terms("KAFKA strea", row), both, "{}", row.key);
        assert!(!cao_index::matches_all_terms("kafka zebra", row));
    }
    assert!(pool.iter().any(|(r, _)| cao_index::matches_all_terms(query, r)));
    assert!(pool.iter().any(|(r, _)| !cao_index::matches_all_terms(query, r)));
}

/// `inner`, but reading the context columns (the default [`LexicalScorer::uses_context`]) although it may weigh them
/// 0: the pool that reads every column, to compare with the one that leaves them unread.
struct ReadsContext(Bm25);

impl LexicalScorer for ReadsContext {
    fn idf(&self, corpus: &CorpusStats, df: u64) -> f64 {
        self.0.idf(corpus, df)
    }
    fn term_score(&self, corpus: &CorpusStats, idf: f64, term: &TermInDoc) -> f64 {
        self.0.term_score(corpus, idf, term)
    }
    fn term_bound(&self, idf: f64) -> f64 {
        self.0.term_bound(idf)
    }
}
