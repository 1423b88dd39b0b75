//! Who may connect, and to what.
//!
//! - Socket files (`unix_socket`, `control_socket`) are created with `socket_mode` (0600 by
//!   default, whatever the umask) and `socket_group`, and only ever replace a *stale socket*:
//!   a socket file nobody listens on. A regular file, directory or symlink at the path, or a
//!   socket a live server answers on, is an error.
//! - A client's identity is its Unix peer UID (`SO_PEERCRED`, Unix socket only) and the
//!   subjectAltName DNS names of a TLS client certificate verified against `tls_ca`.
//! - An export with an `allow_uids` or `allow_names` list is refused (NBD_REP_ERR_POLICY) to
//!   a client matching neither; `require_client_cert` refuses clients without a verified
//!   certificate.
//! - The control socket answers only its owner's UID and root.

use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;

/// What is known about a client.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Peer {
    /// The peer's UID, on a Unix socket.
    pub uid: Option<u32>,
    /// The DNS names of a verified TLS client certificate (`Some(empty)`: a certificate
    /// without names).
    pub cert_names: Option<Vec<String>>,
}

/// An export's access rules.
#[derive(Clone, Debug, Default)]
pub(crate) struct Rules {
    pub allow_uids: Vec<u32>,
    pub allow_names: Vec<String>,
    pub require_client_cert: bool,
}

impl Rules {
    /// Why `peer` may not open the export, if it may not.
    pub fn refusal(&self, peer: &Peer) -> Option<String> {
        if self.require_client_cert && peer.cert_names.is_none() {
            return Some("this export requires a TLS client certificate".into());
        }
        if self.allow_uids.is_empty() && self.allow_names.is_empty() {
            return None;
        }
        let uid_ok = peer.uid.is_some_and(|u| self.allow_uids.contains(&u));
        let name_ok = peer
            .cert_names
            .as_ref()
            .is_some_and(|names| names.iter().any(|n| self.allow_names.iter().any(|a| a == n)));
        if uid_ok || name_ok {
            return None;
        }
        Some(match (peer.uid, &peer.cert_names) {
            (Some(u), _) => format!("uid {u} is not allowed on this export"),
            (None, Some(_)) => {
                "the client certificate's names are not allowed on this export".into()
            }
            (None, None) => {
                "this export allows only listed Unix users or client certificates".into()
            }
        })
    }
}

/// The peer UID of a Unix socket (`SO_PEERCRED`).
pub(crate) fn peer_uid(s: &UnixStream) -> Option<u32> {
    use std::os::fd::AsRawFd;
    // SAFETY: ucred is plain data; getsockopt writes at most `len` bytes into it.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: a valid socket descriptor and a live ucred with its length.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(cred.uid)
}

/// The DNS names of a (verified) certificate.
pub(crate) fn cert_names(der: &rustls::pki_types::CertificateDer<'_>) -> Vec<String> {
    match webpki::EndEntityCert::try_from(der) {
        Ok(c) => c.valid_dns_names().map(str::to_string).collect(),
        Err(_) => Vec::new(),
    }
}

/// Binds a Unix listener at `path` with permissions `mode` and group `gid`, replacing only a
/// stale socket.
pub(crate) fn bind_unix(path: &Path, mode: u32, gid: Option<u32>) -> Result<UnixListener, String> {
    let shown = path.display();
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => match UnixStream::connect(path) {
            Ok(_) => return Err(format!("{shown}: another server is listening on this socket")),
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                std::fs::remove_file(path).map_err(|e| format!("{shown}: stale socket: {e}"))?;
            }
            Err(e) => {
                return Err(format!("{shown}: cannot tell whether the socket is in use: {e}"))
            }
        },
        Ok(_) => return Err(format!("{shown}: exists and is not a socket; not replacing it")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{shown}: {e}")),
    }
    // The socket file is created with the umask's permissions: a umask allowing nobody else
    // closes the window before the chmod below.
    // SAFETY: umask only swaps the process's file creation mask.
    let old = unsafe { libc::umask(0o177) };
    let bound = UnixListener::bind(path);
    // SAFETY: as above, restoring it.
    unsafe { libc::umask(old) };
    let l = bound.map_err(|e| format!("binding {shown}: {e}"))?;
    let fail = |e: io::Error, what: &str| {
        let _ = std::fs::remove_file(path);
        format!("{shown}: {what}: {e}")
    };
    if let Some(gid) = gid {
        std::os::unix::fs::lchown(path, None, Some(gid)).map_err(|e| fail(e, "chown"))?;
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| fail(e, "chmod"))?;
    Ok(l)
}

/// A group by name or number.
pub(crate) fn group_id(group: &str) -> Result<u32, String> {
    if let Ok(n) = group.parse::<u32>() {
        return Ok(n);
    }
    let text = std::fs::read_to_string("/etc/group").map_err(|e| format!("/etc/group: {e}"))?;
    text.lines()
        .filter_map(|l| {
            let mut f = l.split(':');
            let name = f.next()?;
            let gid = f.nth(1)?.parse::<u32>().ok()?;
            (name == group).then_some(gid)
        })
        .next()
        .ok_or_else(|| format!("socket_group `{group}`: no such group in /etc/group"))
}

/// Whether a control client may give orders: the server's own user and root.
pub(crate) fn control_allowed(uid: Option<u32>) -> bool {
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    matches!(uid, Some(u) if u == me || u == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_refuse_unlisted_peers() {
        let open = Rules::default();
        assert_eq!(open.refusal(&Peer::default()), None);
        let r = Rules {
            allow_uids: vec![1000],
            allow_names: vec!["client.a".into()],
            ..Rules::default()
        };
        assert_eq!(r.refusal(&Peer { uid: Some(1000), cert_names: None }), None);
        assert!(r.refusal(&Peer { uid: Some(1001), cert_names: None }).unwrap().contains("1001"));
        assert!(r.refusal(&Peer::default()).is_some(), "TCP without certificate");
        let cert = |n: &str| Peer { uid: None, cert_names: Some(vec![n.into()]) };
        assert_eq!(r.refusal(&cert("client.a")), None);
        assert!(r.refusal(&cert("client.b")).is_some());
        let req = Rules { require_client_cert: true, ..Rules::default() };
        assert!(req.refusal(&Peer { uid: Some(0), cert_names: None }).is_some());
        assert_eq!(req.refusal(&cert("anyone")), None);
    }

    #[test]
    fn sockets_replace_only_stale_sockets_and_get_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.sock");
        std::fs::write(&p, b"precious").unwrap();
        let e = bind_unix(&p, 0o600, None).unwrap_err();
        assert!(e.contains("not a socket"), "{e}");
        assert_eq!(std::fs::read(&p).unwrap(), b"precious");
        std::fs::remove_file(&p).unwrap();
        let l = bind_unix(&p, 0o600, None).unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let e = bind_unix(&p, 0o600, None).unwrap_err();
        assert!(e.contains("another server"), "{e}");
        drop(l); // the file stays: a stale socket now
        let _l = bind_unix(&p, 0o660, Some(group_id("0").unwrap())).unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o660);
        assert!(group_id("no-such-group-here").is_err());
    }

    #[test]
    fn control_is_for_the_owner_and_root() {
        // SAFETY: geteuid cannot fail.
        let me = unsafe { libc::geteuid() };
        assert!(control_allowed(Some(me)));
        assert!(control_allowed(Some(0)));
        assert!(!control_allowed(Some(me.wrapping_add(4242))));
        assert!(!control_allowed(None));
    }
}
