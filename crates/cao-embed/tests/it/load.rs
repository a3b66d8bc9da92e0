use cao_embed::testing::{TINY_DIM, tiny_config, write_tiny_model};
use cao_embed::{EmbedError, Embedder, MINILM_L6_V2, Pooling, dot};
use std::path::Path;

fn tiny() -> (tempfile::TempDir, Embedder) {
    let dir = tempfile::tempdir().expect("tempdir");
    write_tiny_model(dir.path()).expect("tiny model");
    let e = Embedder::load(dir.path()).expect("load tiny model");
    (dir, e)
}

fn norm(v: &[f32]) -> f32 {
    dot(v, v).sqrt()
}

#[test]
fn vectors_are_unit_length_deterministic_and_distinct() {
    let (_dir, e) = tiny();
    assert_eq!(e.dim(), TINY_DIM);
    assert_eq!(e.pooling(), Pooling::Mean);
    assert!(e.model_id().starts_with("sha256:"), "{}", e.model_id());
    let texts = ["the cat sat on the mat", "stock prices fell", "", "zzz unknown words"];
    let v = e.embed(&texts).expect("embed");
    assert_eq!(v.len(), texts.len());
    for x in &v {
        assert_eq!(x.len(), TINY_DIM);
        assert!(x.iter().all(|c| c.is_finite()));
        assert!((norm(x) - 1.0).abs() < 1e-4, "norm {}", norm(x));
    }
    let again = e.embed_one("the cat sat on the mat").expect("embed");
    assert!((dot(&v[0], &again) - 1.0).abs() < 1e-5, "same text, same vector");
    assert!(dot(&v[0], &v[1]) < 0.9999, "different texts differ");
}

#[test]
fn padding_in_a_batch_does_not_change_a_vector() {
    // Mean pooling must average only real tokens: a short text in a batch with a long one (padded) embeds as alone.
    let (_dir, e) = tiny();
    // Texts of similar length share a batch (so the shorter one is padded).
    let texts = ["a cat", "the dog was on the rug , we"];
    assert_eq!(cao_embed::length_batches(&texts), vec![vec![0, 1]]);
    let batch = e.embed(&texts).expect("embed");
    let alone = e.embed_one("a cat").expect("embed");
    assert!(
        batch[0].iter().zip(&alone).all(|(a, b)| (a - b).abs() < 1e-5),
        "{:?} vs {:?}",
        &batch[0][..4],
        &alone[..4]
    );
}

#[test]
fn many_texts_run_in_batches_in_order() {
    let (_dir, e) = tiny();
    let texts: Vec<String> = (0..(cao_embed::MAX_BATCH + 5))
        .map(|i| format!("hello world {}", "cat ".repeat(i % 7)))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let all = e.embed(&refs).expect("embed");
    assert_eq!(all.len(), texts.len());
    let last = e.embed_one(refs[refs.len() - 1]).expect("embed");
    assert!((dot(&all[all.len() - 1], &last) - 1.0).abs() < 1e-5);
}

#[test]
fn texts_of_mixed_lengths_come_back_in_order_each_as_if_alone() {
    let (_dir, e) = tiny();
    let texts: Vec<String> = (0..(cao_embed::MAX_BATCH * 2 + 3))
        .map(|i| format!("note {i} {}", "cat dog rug ".repeat((i * 7) % 23)))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batches = cao_embed::length_batches(&refs);
    let mut seen: Vec<usize> = batches.iter().flatten().copied().collect();
    seen.sort_unstable();
    assert_eq!(
        seen,
        (0..refs.len()).collect::<Vec<_>>(),
        "every text in exactly one batch"
    );
    assert!(batches.len() > 2, "mixed lengths split into several batches");
    for b in &batches {
        assert!(b.len() <= cao_embed::MAX_BATCH);
        let (short, long) = (refs[b[0]].len(), refs[b[b.len() - 1]].len());
        assert!(long <= short + short / 4 + 32, "batch lengths {short}..{long}");
    }
    let all = e.embed(&refs).expect("embed");
    assert_eq!(all.len(), refs.len());
    for (i, text) in refs.iter().enumerate() {
        let alone = e.embed_one(text).expect("embed");
        assert!(
            all[i].iter().zip(&alone).all(|(a, b)| (a - b).abs() < 1e-5),
            "text {i} differs from its embedding alone"
        );
    }
}

#[test]
fn a_pooling_config_selects_cls_pooling() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_tiny_model(dir.path()).expect("tiny model");
    let mean = Embedder::load(dir.path())
        .expect("load")
        .embed_one("the cat sat")
        .expect("embed");
    std::fs::create_dir_all(dir.path().join("1_Pooling")).expect("mkdir");
    std::fs::write(
        dir.path().join("1_Pooling/config.json"),
        r#"{"word_embedding_dimension": 32, "pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#,
    )
    .expect("write");
    let e = Embedder::load(dir.path()).expect("load");
    assert_eq!(e.pooling(), Pooling::Cls);
    let cls = e.embed_one("the cat sat").expect("embed");
    assert!((norm(&cls) - 1.0).abs() < 1e-4);
    assert!(dot(&mean, &cls) < 0.9999, "CLS and mean pooling differ");
    std::fs::write(
        dir.path().join("1_Pooling/config.json"),
        r#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": true}"#,
    )
    .expect("write");
    assert!(matches!(Embedder::load(dir.path()), Err(EmbedError::BadConfig { .. })));
}

#[test]
fn a_missing_file_is_named() {
    for file in ["config.json", "tokenizer.json", "model.safetensors"] {
        let dir = tempfile::tempdir().expect("tempdir");
        write_tiny_model(dir.path()).expect("tiny model");
        std::fs::remove_file(dir.path().join(file)).expect("rm");
        match Embedder::load(dir.path()) {
            Err(EmbedError::MissingFile { file: f, .. }) => assert_eq!(f, file),
            other => panic!("{file}: {other:?}"),
        }
    }
}

fn with_config(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut c = tiny_config();
    edit(&mut c);
    std::fs::write(dir.join("config.json"), serde_json::to_vec(&c).expect("json")).expect("write");
}

#[test]
fn bad_configurations_are_errors_not_panics() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_tiny_model(dir.path()).expect("tiny model");
    type Edit = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(&str, Edit)> = vec![
        ("zero heads", Box::new(|c| c["num_attention_heads"] = 0.into())),
        ("heads not dividing", Box::new(|c| c["num_attention_heads"] = 5.into())),
        ("huge vocabulary", Box::new(|c| c["vocab_size"] = 10_000_000.into())),
        ("not a number", Box::new(|c| c["hidden_size"] = "big".into())),
        (
            "pad outside vocabulary",
            Box::new(|c| c["pad_token_id"] = 100_000.into()),
        ),
    ];
    for (what, edit) in cases {
        with_config(dir.path(), edit);
        let r = Embedder::load(dir.path());
        assert!(matches!(r, Err(EmbedError::BadConfig { .. })), "{what}: {r:?}");
    }
    std::fs::write(dir.path().join("config.json"), "{not json").expect("write");
    assert!(matches!(Embedder::load(dir.path()), Err(EmbedError::BadConfig { .. })));
}

#[test]
fn weights_of_another_shape_or_not_safetensors_are_bad_weights() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_tiny_model(dir.path()).expect("tiny model");
    // The configuration now asks for more layers than the weights hold.
    with_config(dir.path(), |c| c["num_hidden_layers"] = 3.into());
    let r = Embedder::load(dir.path());
    assert!(matches!(r, Err(EmbedError::BadWeights { .. })), "{r:?}");
    with_config(dir.path(), |_| {});
    let weights = std::fs::read(dir.path().join("model.safetensors")).expect("read");
    std::fs::write(dir.path().join("model.safetensors"), &weights[..weights.len() / 2]).expect("write");
    let r = Embedder::load(dir.path());
    assert!(matches!(r, Err(EmbedError::BadWeights { .. })), "{r:?}");
    std::fs::write(
        dir.path().join("model.safetensors"),
        b"\xff\xff\xff\xff\xff\xff\xff\x7fgarbage",
    )
    .expect("write");
    let r = Embedder::load(dir.path());
    assert!(matches!(r, Err(EmbedError::BadWeights { .. })), "{r:?}");
}

#[test]
fn a_tokenizer_outside_the_vocabulary_or_unparsable_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_tiny_model(dir.path()).expect("tiny model");
    with_config(dir.path(), |c| c["vocab_size"] = 10.into());
    let r = Embedder::load(dir.path());
    assert!(matches!(r, Err(EmbedError::BadTokenizer { .. })), "{r:?}");
    with_config(dir.path(), |_| {});
    std::fs::write(dir.path().join("tokenizer.json"), r#"{"model": 3}"#).expect("write");
    let r = Embedder::load(dir.path());
    assert!(matches!(r, Err(EmbedError::BadTokenizer { .. })), "{r:?}");
}

#[test]
fn asking_for_a_known_model_checks_its_hash() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_tiny_model(dir.path()).expect("tiny model");
    match Embedder::load_expecting(dir.path(), &MINILM_L6_V2) {
        Err(EmbedError::HashMismatch { expected, actual, .. }) => {
            assert_eq!(expected, MINILM_L6_V2.sha256);
            assert_eq!(actual.len(), 64);
            assert_ne!(actual, expected);
        }
        other => panic!("{other:?}"),
    }
    let info = cao_embed::inspect_dir(dir.path()).expect("inspect");
    assert!(info.known.is_none());
    assert_eq!(info.dim, TINY_DIM);
    assert_eq!(info.model_id, format!("sha256:{}", &info.sha256[..16]));
}

/// The stock candle encoder over `dir`'s files: the weights as the file lays them out
/// (`VarBuilder::from_buffered_safetensors`), the tokenizer as the file has it, mean pooling, L2 normalisation: the
/// reference the embedder's own weight layout and threads are held to.
pub(crate) fn stock_embed(dir: &Path, text: &str) -> Vec<f32> {
    use candle_core::{DType, Device, Tensor};
    let config: candle_transformers::models::bert::Config =
        serde_json::from_slice(&std::fs::read(dir.join("config.json")).expect("config")).expect("parse");
    let weights = std::fs::read(dir.join("model.safetensors")).expect("weights");
    let vb = candle_nn::VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu).expect("weights");
    let model = candle_transformers::models::bert::BertModel::load(vb, &config).expect("model");
    let mut tokenizer = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json")).expect("tokenizer");
    // One text alone: no padding (a tokenizer file may ask for a fixed length).
    tokenizer.with_padding(None);
    let enc = tokenizer.encode(text, true).expect("encode");
    let n = enc.get_ids().len();
    let ids = Tensor::from_vec(enc.get_ids().to_vec(), (1, n), &Device::Cpu).expect("ids");
    let mask = Tensor::from_vec(enc.get_attention_mask().to_vec(), (1, n), &Device::Cpu).expect("mask");
    let types = ids.zeros_like().expect("types");
    let hidden = model.forward(&ids, &types, Some(&mask)).expect("forward");
    let mean: Vec<f32> = hidden
        .mean(1)
        .and_then(|t| t.squeeze(0))
        .and_then(|t| t.to_vec1())
        .expect("pool");
    let norm = dot(&mean, &mean).sqrt();
    mean.iter().map(|x| x / norm).collect()
}

pub(crate) fn max_difference(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn the_vectors_are_the_stock_candle_encoders() {
    // The embedder lays the linear layers' weights out transposed for the matrix products; the vectors stay those of
    // candle's own BERT over the file's layout, up to the order of the additions.
    let (dir, e) = tiny();
    for text in [
        "the cat sat on the mat",
        "stock prices fell !",
        "hello",
        "we use pytest for tests , friday",
    ] {
        let ours = e.embed_one(text).expect("embed");
        let stock = stock_embed(dir.path(), text);
        let d = max_difference(&ours, &stock);
        assert!(d < 1e-5, "{text:?}: max difference {d}");
    }
}

#[test]
fn a_text_embedded_on_the_model_thread_is_the_one_embedded_here() {
    let (_dir, e) = tiny();
    let e = std::sync::Arc::new(e);
    let texts = ["the cat sat on the mat", "stock prices fell", "", "we deploy on friday"];
    // Several queued at once, then waited for in another order, twice each.
    let pending: Vec<_> = texts.iter().map(|t| e.spawn_one(t)).collect();
    for (p, t) in pending.iter().zip(texts).rev() {
        let here = e.embed_one(t).expect("embed");
        assert_eq!(p.wait().expect("embedded"), &here[..], "{t:?}");
        assert_eq!(p.wait().expect("embedded"), &here[..], "{t:?}, asked again");
    }
    // From several threads at once, each taking its own vector.
    std::thread::scope(|s| {
        for t in texts {
            let e = &e;
            s.spawn(move || {
                let owned = e.spawn_one(t).into_vector().expect("embedded");
                assert_eq!(owned, e.embed_one(t).expect("embed"), "{t:?}");
            });
        }
    });
    // A pending embedding nobody waits for is dropped without harm.
    drop(e.spawn_one("the dog"));
    assert_eq!(
        e.spawn_one("the dog").into_vector().expect("embedded"),
        e.embed_one("the dog").expect("embed")
    );
}
