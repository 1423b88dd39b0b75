//! NBD_OPT_STARTTLS with real TLS clients: libnbd (nbdsh, `nbds://` URIs with
//! `tls-certificates=DIR`) and qemu-img (`--object tls-creds-x509`), against a throwaway CA.

use elevator_server::{ExportConfig, Server, ServerConfig, TlsSetting};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Writes ca-cert.pem, server-cert.pem and server-key.pem (the names libnbd and qemu look
/// for in a credentials directory) for a CA made up on the spot.
fn make_certs(dir: &Path) {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
        KeyUsagePurpose, SanType,
    };
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "elevator test CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    p.subject_alt_names.push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
    p.distinguished_name.push(DnType::CommonName, "localhost");
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = p.signed_by(&key, &ca_cert, &ca_key).unwrap();
    std::fs::write(dir.join("ca-cert.pem"), ca_cert.pem()).unwrap();
    std::fs::write(dir.join("server-cert.pem"), cert.pem()).unwrap();
    std::fs::write(dir.join("server-key.pem"), key.serialize_pem()).unwrap();
    // A client directory: the CA, and a client certificate named client.test.
    let client = dir.join("client");
    std::fs::create_dir(&client).unwrap();
    let ckey = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(vec!["client.test".to_string()]).unwrap();
    p.distinguished_name.push(DnType::CommonName, "client.test");
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let ccert = p.signed_by(&ckey, &ca_cert, &ca_key).unwrap();
    std::fs::write(client.join("ca-cert.pem"), ca_cert.pem()).unwrap();
    std::fs::write(client.join("client-cert.pem"), ccert.pem()).unwrap();
    std::fs::write(client.join("client-key.pem"), ckey.serialize_pem()).unwrap();
}

struct Setup {
    _dir: tempfile::TempDir,
    certs: PathBuf,
    server: Server,
    port: u16,
}

fn start(mode: TlsSetting) -> Setup {
    start_with(mode, |_| {})
}

fn start_with(mode: TlsSetting, tune: impl FnOnce(&mut ServerConfig)) -> Setup {
    let dir =
        tempfile::Builder::new().prefix("nbd-tls").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let certs = dir.path().join("certs");
    std::fs::create_dir(&certs).unwrap();
    make_certs(&certs);
    let mut c = ServerConfig::with_exports(vec![ExportConfig {
        name: "disk".into(),
        path: dir.path().join("disk.img"),
        size: Some(4 << 20),
        read_only: false,
        weight: 500,
        description: "TLS test".into(),
        ..Default::default()
    }]);
    c.listen = Some("127.0.0.1:0".into());
    c.tls = mode;
    c.tls_cert = Some(certs.join("server-cert.pem"));
    c.tls_key = Some(certs.join("server-key.pem"));
    tune(&mut c);
    let server = Server::start(c).expect("server starts");
    let port = server.local_addr().unwrap().port();
    Setup { _dir: dir, certs, server, port }
}

fn nbdsh_available() -> bool {
    let ok = Command::new("/usr/bin/nbdsh")
        .env("PATH", "/usr/bin:/bin")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("SKIP: nbdsh is not available");
    }
    ok
}

/// Runs an nbdsh script against `uri`; returns (success, output). libnbd reads the
/// certificates directory named in the URI only when allowed to.
fn nbdsh(uri: &str, script: &str) -> (bool, String) {
    let script = format!("h.set_uri_allow_local_file(True)\nh.connect_uri(\"{uri}\")\n{script}");
    let out = Command::new("/usr/bin/nbdsh")
        .env("PATH", "/usr/bin:/bin")
        .args(["-c", &script])
        .output()
        .expect("nbdsh runs");
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

const SCRIPT: &str = r#"
assert h.get_tls_negotiated()
data = bytes(range(256)) * 256
h.pwrite(data, 12345)
h.flush()
assert h.pread(len(data), 12345) == data
big = h.pread(4 * 1024 * 1024, 0)
assert big[12345:12345 + len(data)] == data
"#;

#[test]
fn require_mode_serves_tls_clients_and_refuses_plain_ones() {
    if !nbdsh_available() {
        return;
    }
    let s = start(TlsSetting::Require);
    let tls_uri =
        format!("nbds://127.0.0.1:{}/disk?tls-certificates={}", s.port, s.certs.display());
    let (ok, out) = nbdsh(&tls_uri, SCRIPT);
    assert!(ok, "TLS client failed: {out}");
    // libnbd without TLS: every option is answered NBD_REP_ERR_TLS_REQD, the connect fails.
    let (ok, out) = nbdsh(&format!("nbd://127.0.0.1:{}/disk", s.port), "h.get_size()");
    assert!(!ok, "a plain client got through a TLS-only server: {out}");
    // A client that trusts another CA fails the handshake.
    let other = s.certs.parent().unwrap().join("other-ca");
    std::fs::create_dir(&other).unwrap();
    make_certs(&other);
    let (ok, _) = nbdsh(
        &format!("nbds://127.0.0.1:{}/disk?tls-certificates={}", s.port, other.display()),
        "h.get_size()",
    );
    assert!(!ok, "a server certificate from an unknown CA was accepted");
    // The server survives all that.
    let (ok, out) = nbdsh(&tls_uri, "assert h.get_size() == 4 * 1024 * 1024");
    assert!(ok, "{out}");
    let stats = s.server.stats();
    s.server.shutdown();
    assert!(stats[0].writes >= 1 && stats[0].errors == 0, "{stats:?}");
}

#[test]
fn on_mode_lets_the_client_choose() {
    if !nbdsh_available() {
        return;
    }
    let s = start(TlsSetting::On);
    let tls_uri =
        format!("nbds://127.0.0.1:{}/disk?tls-certificates={}", s.port, s.certs.display());
    let (ok, out) = nbdsh(&tls_uri, SCRIPT);
    assert!(ok, "TLS client failed: {out}");
    let (ok, out) = nbdsh(
        &format!("nbd://127.0.0.1:{}/disk", s.port),
        "assert not h.get_tls_negotiated()\nassert h.pread(4, 12345) == bytes([0, 1, 2, 3])",
    );
    assert!(ok, "plain client failed: {out}");
    s.server.shutdown();
}

#[test]
fn qemu_img_with_x509_credentials() {
    if !Path::new("/usr/bin/qemu-img").exists() {
        eprintln!("SKIP: qemu-img is not installed");
        return;
    }
    let s = start(TlsSetting::Require);
    let src = s.certs.parent().unwrap().join("src.raw");
    let data: Vec<u8> = (0..(1u32 << 20)).map(|i| (i % 251) as u8).collect();
    std::fs::write(&src, &data).unwrap();
    let object = format!("tls-creds-x509,id=tls0,endpoint=client,dir={}", s.certs.display());
    let target = format!(
        "driver=nbd,host=127.0.0.1,port={},export=disk,tls-creds=tls0,tls-hostname=localhost",
        s.port
    );
    let out = Command::new("qemu-img")
        .args(["convert", "-n", "-f", "raw", "--object", &object, "--target-image-opts"])
        .arg(&src)
        .arg(&target)
        .output()
        .unwrap();
    assert!(out.status.success(), "qemu-img convert: {}", String::from_utf8_lossy(&out.stderr));
    let out = Command::new("qemu-img")
        .args(["info", "--object", &object, "--image-opts", &target])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "qemu-img info: {}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("4 MiB"), "{text}");
    s.server.shutdown();
}

/// `tls_verify_client`: a client without a certificate from the CA is refused, one with it is
/// served (nbdsh and qemu-img); an export's `allow_names` refuses other certificate names.
#[test]
fn client_certificates_are_verified_and_named() {
    let s = start_with(TlsSetting::Require, |c| {
        let ca = c.tls_cert.as_ref().unwrap().parent().unwrap().join("ca-cert.pem");
        c.tls_ca = Some(ca);
        c.tls_verify_client = true;
        let mut other = c.exports[0].clone();
        other.name = "other".into();
        other.allow_names = vec!["someone.else".into()];
        c.exports.push(other);
    });
    let client = s.certs.join("client");
    if nbdsh_available() {
        let with =
            format!("nbds://127.0.0.1:{}/disk?tls-certificates={}", s.port, client.display());
        let (ok, out) = nbdsh(&with, SCRIPT);
        assert!(ok, "a client with a certificate from the CA was refused: {out}");
        let without =
            format!("nbds://127.0.0.1:{}/disk?tls-certificates={}", s.port, s.certs.display());
        let (ok, out) = nbdsh(&without, "h.get_size()");
        assert!(!ok, "a client without a certificate got in: {out}");
        let other =
            format!("nbds://127.0.0.1:{}/other?tls-certificates={}", s.port, client.display());
        let (ok, out) = nbdsh(&other, "h.get_size()");
        assert!(!ok && out.contains("policy"), "allow_names did not refuse: {out}");
    }
    if Path::new("/usr/bin/qemu-img").exists() {
        let info = |dir: &Path| {
            let object = format!("tls-creds-x509,id=tls0,endpoint=client,dir={}", dir.display());
            let target = format!(
                "driver=nbd,host=127.0.0.1,port={},export=disk,tls-creds=tls0,tls-hostname=localhost",
                s.port
            );
            Command::new("qemu-img")
                .args(["info", "--object", &object, "--image-opts", &target])
                .output()
                .unwrap()
        };
        let out = info(&client);
        assert!(out.status.success(), "qemu-img with a client certificate: {out:?}");
        let out = info(&s.certs);
        assert!(!out.status.success(), "qemu-img without a client certificate got in");
    }
    s.server.shutdown();
}
