//! Latency of the recall pools on a synthetic corpus.
//!
//! `cargo run --release -p cao-index --example pool_bench -- [rows] [db path]` (defaults: 100000 rows,
//! `$TMPDIR/cao-pool-bench/<rows>.db`; an existing database with that many rows is reused). Words follow a Zipf
//! distribution over a 20 000-word vocabulary, so natural queries contain both very common and rare words.
//! Prints p50/p99 per pool and query length.

use cao_core::{Key, MemoryType, Scope};
use cao_index::{Index, MemoryRow, Visibility};
use cao_rank::Bm25;
use chrono::{TimeDelta, Utc};
use std::time::Instant;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Word ids drawn with probability proportional to 1 / rank.
struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    fn new(n: usize) -> Zipf {
        let mut acc = 0.0;
        let mut cdf: Vec<f64> = (1..=n)
            .map(|r| {
                acc += 1.0 / r as f64;
                acc
            })
            .collect();
        for c in &mut cdf {
            *c /= acc;
        }
        Zipf { cdf }
    }
    fn sample(&self, rng: &mut Rng) -> usize {
        let u = rng.unit();
        self.cdf.partition_point(|c| *c < u)
    }
}

fn word(id: usize) -> String {
    const SYL: [&str; 16] = [
        "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "po", "qu", "di", "fa", "gu", "he", "jo",
    ];
    let mut s = String::new();
    let mut x = id + 1;
    while x > 0 {
        s.push_str(SYL[x % 16]);
        x /= 16;
    }
    s
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}

#[allow(clippy::print_stdout)] // a benchmark report is its output
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let rows: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(100_000);
    let path = args
        .get(2)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("cao-pool-bench").join(format!("{rows}.db")));
    let index = Index::open(&path)?;
    let zipf = Zipf::new(20_000);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let now = Utc::now();
    if index.count()? != rows {
        let started = Instant::now();
        for i in index.count()?..rows {
            let (scope, scope_id) = match i % 10 {
                0..=3 => (Scope::Project, Some("p1".to_owned())),
                4..=6 => (Scope::Global, None),
                7 => (Scope::Project, Some(format!("p{}", 2 + i % 7))),
                8 => (Scope::Session, Some(format!("s{}", i % 5))),
                _ => (Scope::Agent, Some("reviewer".to_owned())),
            };
            let len = 20 + (rng.next() % 100) as usize;
            let content = (0..len)
                .map(|_| word(zipf.sample(&mut rng)))
                .collect::<Vec<_>>()
                .join(" ");
            let key = Key::parse_strict(&format!("memory-{i}"))?;
            let mut row = MemoryRow::new(
                format!("id-{i}"),
                scope,
                scope_id,
                key,
                MemoryType::Project,
                format!("/wiki/memory-{i}.md"),
                "tag",
                content,
                now - TimeDelta::seconds(i64::try_from(rows - i)?),
            );
            row.entry_count = 1;
            index.upsert(&row)?;
        }
        eprintln!("built {rows} rows in {:.1}s", started.elapsed().as_secs_f64());
    }
    let vis = Visibility::none()
        .allow(Scope::Global, None)
        .allow(Scope::Federated, None)
        .allow(Scope::Project, Some("p1"))
        .allow(Scope::Session, Some("s1"));
    for words in 1..=5 {
        let queries: Vec<String> = (0..200)
            .map(|_| {
                (0..words)
                    .map(|_| word(zipf.sample(&mut rng)))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        for (name, limit) in [("bm25", 10usize), ("bm25", 50), ("metadata", 10)] {
            let mut lat = Vec::new();
            let mut hits = 0;
            for q in &queries {
                let t = Instant::now();
                hits += if name == "bm25" {
                    index.bm25_pool(&vis, None, q, limit, &Bm25::DEFAULT)?.len()
                } else {
                    index.metadata_pool(&vis, None, q, limit)?.len()
                };
                lat.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            println!(
                "{name:<8} words={words} limit={limit:<3} p50={:>7.3} ms p99={:>8.3} ms avg_hits={:.1}",
                percentile(&mut lat, 0.5),
                percentile(&mut lat, 0.99),
                hits as f64 / queries.len() as f64
            );
        }
    }
    let mut lat = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        index.recency_pool(&vis, None, 50)?;
        lat.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    println!(
        "recency  limit=50  p50={:>7.3} ms p99={:>8.3} ms",
        percentile(&mut lat, 0.5),
        percentile(&mut lat, 0.99)
    );
    Ok(())
}
