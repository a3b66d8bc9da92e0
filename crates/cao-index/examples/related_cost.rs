//! Measurement of the related-memory pass's index work at growing corpus sizes (a tool, not a test):
//! `cargo run --release -p cao-index --example related_cost -- <turns.txt> <sizes csv>`, `turns.txt` holding one
//! text per line (e.g. the LoCoMo turns). Rows are written as the bench writes memories (`"<turn> (note i)"`, five
//! scopes in turn, 50 tags) with three compiler edges each; at each size 200 more are written one at a time and for
//! each the p50/p90 (ms) of: the upsert, recall's exact pool (`bm25_pool_terms`, 16 terms, limit 4), the bounded
//! pool the related pass uses (`bm25_pool_bounded`, 2 000 postings) and how often both give the same top 4, the
//! `related_keys` write, the edge listing and the edge replacement.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used, missing_docs)]

use cao_core::{Key, MemoryType, Scope};
use cao_index::{Index, MemoryRow, ProducerEdge, RelOrigin, RelStatus, RelType, RelationshipFilter, Visibility};
use std::collections::HashMap;
use std::time::{Duration, Instant};

fn terms(key: &str, tags: &str, content: &str) -> Vec<String> {
    let mut counts: HashMap<String, (usize, usize)> = HashMap::new();
    for (pos, t) in [key, tags, content]
        .iter()
        .flat_map(|t| cao_core::text::search_terms(t))
        .enumerate()
    {
        if t.len() < 2
            || [
                "the", "and", "to", "a", "i", "you", "is", "it", "of", "that", "in", "my", "for", "was",
            ]
            .contains(&t.as_str())
        {
            continue;
        }
        counts.entry(t).or_insert((0, pos)).0 += 1;
    }
    let mut r: Vec<_> = counts.into_iter().collect();
    r.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.1.1.cmp(&b.1.1)));
    r.truncate(16);
    r.into_iter().map(|(t, _)| t).collect()
}

fn p50(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

fn p90(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() * 9 / 10].as_secs_f64() * 1000.0
}

const BUDGET: i64 = 2000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let turns: Vec<String> = std::fs::read_to_string(&args[1])
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let sizes: Vec<usize> = args[2].split(',').map(|s| s.parse().unwrap()).collect();
    let dir = tempfile::tempdir().unwrap();
    let idx = Index::open(&dir.path().join("cao.db")).unwrap();
    let now = chrono::Utc::now();
    let scopes = [
        (Scope::Project, Some("p1")),
        (Scope::Project, Some("p1")),
        (Scope::Project, Some("p1")),
        (Scope::Global, None),
        (Scope::Session, Some("s1")),
    ];
    let row = |i: usize| {
        let (scope, id) = scopes[i % scopes.len()];
        MemoryRow::new(
            format!("id{i}"),
            scope,
            id.map(str::to_owned),
            Key::parse_strict(&format!("m{i}")).unwrap(),
            MemoryType::Project,
            format!("/x/m{i}.md"),
            format!("t{}", i % 50),
            format!("{} (note {i})", turns[i % turns.len()]),
            now,
        )
    };
    let edges = |i: usize, targets: &[Key]| {
        let e: Vec<ProducerEdge> = targets
            .iter()
            .enumerate()
            .map(|(r, t)| ProducerEdge {
                new_id: format!("e{i}-{r}"),
                target_key: t.clone(),
                status: RelStatus::Active,
                confidence: None,
                rank: Some(r as i64),
                attributes_json: None,
            })
            .collect();
        e
    };
    let mut n = 0usize;
    println!(
        "| memories | upsert | query p50 | query p90 | bounded p50 | bounded p90 | same top | related_keys | list edges | replace edges | total p50 ms |"
    );
    for size in sizes {
        while n + 200 < size {
            let end = (n + 5000).min(size - 200);
            let rows: Vec<_> = (n..end).map(row).collect();
            idx.upsert_many(&rows).unwrap();
            for r in &rows {
                let i: usize = r.key.as_str()[1..].parse().unwrap();
                let t: Vec<Key> = [5, 10, 15]
                    .iter()
                    .filter(|d| i >= **d)
                    .map(|d| Key::parse_strict(&format!("m{}", i - d)).unwrap())
                    .collect();
                idx.replace_producer_edges(
                    r.scope,
                    r.scope_id.as_deref(),
                    &r.key,
                    RelOrigin::Compiler,
                    RelType::RelatesTo,
                    &edges(i, &t),
                    now,
                )
                .unwrap();
            }
            n = end;
        }
        let (mut up, mut q, mut rk, mut ls, mut rp, mut tot) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut qb, mut same) = (Vec::new(), 0usize);
        while n < size {
            let r = row(n);
            let t = Instant::now();
            idx.upsert(&r).unwrap();
            up.push(t.elapsed());
            let ts = terms(r.key.as_str(), &r.tags, &r.content);
            let vis = Visibility::none().allow(r.scope, r.scope_id.as_deref());
            let t = Instant::now();
            let pool = idx.bm25_pool_terms(&vis, None, &ts, 4).unwrap();
            q.push(t.elapsed());
            assert!(!pool.is_empty());
            let t = Instant::now();
            let bounded = idx.bm25_pool_bounded(&vis, &ts, 4, BUDGET).unwrap();
            qb.push(t.elapsed());
            same += usize::from(
                bounded.iter().map(|(x, _)| &x.key).collect::<Vec<_>>()
                    == pool.iter().map(|(x, _)| &x.key).collect::<Vec<_>>(),
            );
            let keys: Vec<Key> = pool
                .into_iter()
                .map(|(x, _)| x.key)
                .filter(|k| *k != r.key)
                .take(3)
                .collect();
            let csv = keys.iter().map(Key::as_str).collect::<Vec<_>>().join(",");
            let t = Instant::now();
            idx.set_related_keys(r.scope, r.scope_id.as_deref(), &r.key, Some(&csv))
                .unwrap();
            rk.push(t.elapsed());
            let t = Instant::now();
            let _ = idx
                .relationships(&RelationshipFilter {
                    scope: Some(r.scope),
                    scope_id: Some(r.scope_id.clone().unwrap_or_default()),
                    source_key: Some(r.key.clone()),
                    status: None,
                    stale: false,
                })
                .unwrap();
            ls.push(t.elapsed());
            let t = Instant::now();
            idx.replace_producer_edges(
                r.scope,
                r.scope_id.as_deref(),
                &r.key,
                RelOrigin::Compiler,
                RelType::RelatesTo,
                &edges(n, &keys),
                now,
            )
            .unwrap();
            rp.push(t.elapsed());
            tot.push(up[up.len() - 1] + q[q.len() - 1] + rk[rk.len() - 1] + ls[ls.len() - 1] + rp[rp.len() - 1]);
            n += 1;
        }
        println!(
            "| {size} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {same}/200 | {:.3} | {:.3} | {:.3} | {:.3} |",
            p50(up),
            p50(q.clone()),
            p90(q.clone()),
            p50(qb.clone()),
            p90(qb),
            p50(rk),
            p50(ls),
            p50(rp),
            p50(tot)
        );
    }
}
