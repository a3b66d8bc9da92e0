//! Secret-gate decisions beyond the reference's cases: compatibility forms of a credential (judged after Unicode
//! NFKC normalisation) and every PEM private key header.

use cao_core::secret::{redact, scan};

/// Fullwidth and other compatibility spellings of a credential are the credential.
#[test]
fn compatibility_forms_are_judged_after_nfkc() {
    let fullwidth_akia = "\u{FF21}\u{FF2B}\u{FF29}\u{FF21}"; // ＡＫＩＡ
    for (text, pattern) in [
        (format!("key {fullwidth_akia}ABCDEFGHIJKLMNOP"), "aws_access_key"),
        (
            "key \u{FF21}\u{FF2B}\u{FF29}\u{FF21}\u{FF21}\u{FF22}\u{FF23}\u{FF24}EFGHIJKLMNOP".to_owned(),
            "aws_access_key",
        ),
        ("\u{FF50}assword: hunter22".to_owned(), "secret_assignment"),
        (
            "ghp\u{FF3F}aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".to_owned(),
            "github_pat",
        ),
        // Compatibility form and an invisible character together.
        (format!("{fullwidth_akia}\u{200B}ABCDEFGHIJKLMNOP"), "aws_access_key"),
    ] {
        assert_eq!(scan(&text), Some(pattern), "{text:?}");
        let redacted = redact(&text);
        assert!(
            redacted.contains(&format!("[REDACTED:{pattern}]")),
            "{text:?} -> {redacted:?}"
        );
        assert_eq!(scan(&redacted), None, "{text:?} -> {redacted:?}");
    }
    // Text around the credential is kept as written.
    assert_eq!(
        redact(&format!("before {fullwidth_akia}ABCDEFGHIJKLMNOP after ｘ")),
        "before [REDACTED:aws_access_key] after ｘ"
    );
    // Compatibility characters alone are not secrets.
    assert_eq!(scan("ＡＢＣ ﬁle ½ café"), None);
    assert_eq!(redact("ＡＢＣ ﬁle ½ café"), "ＡＢＣ ﬁle ½ café");
}

/// Every `-----BEGIN ... PRIVATE KEY-----` header is a PEM private key, whatever the algorithm or wrapping.
#[test]
fn every_pem_private_key_header_is_a_secret() {
    for header in [
        "-----BEGIN PRIVATE KEY-----",
        "-----BEGIN RSA PRIVATE KEY-----",
        "-----BEGIN EC PRIVATE KEY-----",
        "-----BEGIN OPENSSH PRIVATE KEY-----",
        "-----BEGIN ENCRYPTED PRIVATE KEY-----",
        "-----BEGIN DSA PRIVATE KEY-----",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----",
        "-----BEGIN SSH2 ENCRYPTED PRIVATE KEY-----",
    ] {
        let text = format!("note\n{header}\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n");
        assert_eq!(scan(&text), Some("pem_private_key"), "{header}");
        assert!(redact(&text).contains("[REDACTED:pem_private_key]"), "{header}");
    }
    for public in [
        "-----BEGIN PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----",
        "-----BEGIN PGP PUBLIC KEY BLOCK-----",
    ] {
        assert_eq!(scan(public), None, "{public}");
    }
}
