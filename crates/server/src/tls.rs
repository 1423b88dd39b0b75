//! TLS after NBD_OPT_STARTTLS, with rustls.
//!
//! The connection code is written against plain byte streams (the handshake thread, then the
//! worker's io_uring recv/sendmsg on the socket). After STARTTLS the raw socket goes to a
//! *pump* thread that owns the `rustls::ServerConnection` and relays between the socket (ciphertext) and one end
//! of a Unix socket pair (plaintext); the connection carries on with the other end as if
//! nothing had happened. One `poll(2)` loop, non-blocking on both sides, with back-pressure:
//! it stops reading one side while the other cannot take more.

use crate::conn::Stream;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Arc;

/// Plaintext held for the slow side before the pump stops reading the fast one.
const HIGH_WATER: usize = 1 << 20;

/// Client certificates: verified against `ca` (a PEM bundle), and required unless
/// `optional` (then an export's access rules decide).
pub(crate) struct ClientAuth<'a> {
    pub ca: &'a Path,
    pub optional: bool,
}

/// Loads the certificate chain and private key (PEM) into a rustls server configuration.
pub(crate) fn server_config(
    cert: &Path,
    key: &Path,
    client: Option<ClientAuth<'_>>,
) -> Result<Arc<rustls::ServerConfig>, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| format!("{}: {e}", cert.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate in the file", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match client {
        None => builder.with_no_client_auth(),
        Some(c) => {
            let mut roots = rustls::RootCertStore::empty();
            for der in CertificateDer::pem_file_iter(c.ca)
                .map_err(|e| format!("{}: {e}", c.ca.display()))?
            {
                let der = der.map_err(|e| format!("{}: {e}", c.ca.display()))?;
                roots.add(der).map_err(|e| format!("{}: {e}", c.ca.display()))?;
            }
            if roots.is_empty() {
                return Err(format!("{}: no CA certificate in the file", c.ca.display()));
            }
            let v = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            );
            let v = if c.optional { v.allow_unauthenticated() } else { v };
            builder.with_client_cert_verifier(v.build().map_err(|e| e.to_string())?)
        }
    };
    let config =
        builder.with_single_cert(certs, key).map_err(|e| format!("certificate and key: {e}"))?;
    Ok(Arc::new(config))
}

/// Relays the connection `tls` (its handshake done, on the gate's thread) between `raw` and
/// a new socket pair on a pump thread of its own; returns the plaintext end.
pub(crate) fn spawn_pump(
    raw: Stream,
    tls: rustls::ServerConnection,
    conn: u32,
) -> std::io::Result<Stream> {
    let (inner, outer) = UnixStream::pair()?;
    std::thread::Builder::new().name(format!("elevator-tls-{conn}")).spawn(move || {
        if let Err(e) = pump(tls, raw, outer, Vec::new()) {
            tracing::info!(conn, error = %e, "TLS session ended");
        }
    })?;
    Ok(Stream::Unix(inner))
}

fn pump(
    mut tls: rustls::ServerConnection,
    mut raw: Stream,
    mut plain: UnixStream,
    already: Vec<u8>,
) -> std::io::Result<()> {
    raw.set_nonblocking(true)?;
    plain.set_nonblocking(true)?;
    let mut pending_in = already; // ciphertext not yet given to rustls
    let mut to_plain: Vec<u8> = Vec::new(); // decrypted, for the connection
    let mut buf = vec![0u8; 64 << 10];
    let (mut raw_eof, mut plain_eof, mut plain_shut) = (false, false, false);
    loop {
        // Ciphertext in → rustls → plaintext out, as far as the buffers allow.
        while !pending_in.is_empty() && to_plain.len() < HIGH_WATER {
            let n = tls.read_tls(&mut &pending_in[..])?;
            pending_in.drain(..n);
            if let Err(e) = tls.process_new_packets() {
                let _ = tls.write_tls(&mut raw); // the alert, if it fits
                return Err(std::io::Error::new(ErrorKind::InvalidData, e));
            }
            drain_plaintext(&mut tls, &mut to_plain)?;
            if n == 0 {
                break;
            }
        }
        drain_plaintext(&mut tls, &mut to_plain)?;
        // Plaintext to the connection.
        while !to_plain.is_empty() {
            match plain.write(&to_plain) {
                Ok(n) => {
                    to_plain.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        // Records to the client.
        while tls.wants_write() {
            match tls.write_tls(&mut raw) {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        if raw_eof && pending_in.is_empty() && to_plain.is_empty() && !plain_shut {
            let _ = plain.shutdown(std::net::Shutdown::Write);
            plain_shut = true;
        }
        if plain_eof && !tls.wants_write() {
            raw.shutdown();
            return Ok(());
        }
        if raw_eof && plain_shut && plain_eof {
            return Ok(());
        }
        // Wait for whatever can make progress.
        let want_raw_in = !raw_eof && pending_in.len() < HIGH_WATER && to_plain.len() < HIGH_WATER;
        let want_plain_in = !plain_eof && !tls.wants_write();
        let mut fds = [
            libc::pollfd {
                fd: raw.raw_fd(),
                events: (if want_raw_in { libc::POLLIN } else { 0 })
                    | (if tls.wants_write() { libc::POLLOUT } else { 0 }),
                revents: 0,
            },
            libc::pollfd {
                fd: plain.as_raw_fd(),
                events: (if want_plain_in { libc::POLLIN } else { 0 })
                    | (if to_plain.is_empty() { 0 } else { libc::POLLOUT }),
                revents: 0,
            },
        ];
        // SAFETY: two valid pollfds on descriptors we own.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let hup = libc::POLLIN | libc::POLLHUP | libc::POLLERR;
        if want_raw_in && fds[0].revents & hup != 0 {
            match raw.read(&mut buf) {
                Ok(0) => raw_eof = true,
                Ok(n) => pending_in.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(_) => raw_eof = true,
            }
        }
        if want_plain_in && fds[1].revents & hup != 0 {
            match plain.read(&mut buf) {
                Ok(0) => {
                    plain_eof = true;
                    tls.send_close_notify();
                }
                Ok(n) => tls.writer().write_all(&buf[..n])?,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(_) => plain_eof = true,
            }
        }
        if raw_eof && fds[1].revents & (libc::POLLHUP | libc::POLLERR) != 0 && to_plain.is_empty() {
            return Ok(());
        }
    }
}

fn drain_plaintext(
    tls: &mut rustls::ServerConnection,
    to_plain: &mut Vec<u8>,
) -> std::io::Result<()> {
    let mut chunk = [0u8; 16 << 10];
    loop {
        match tls.reader().read(&mut chunk) {
            Ok(0) => return Ok(()), // close_notify: the raw side will see EOF next
            Ok(n) => to_plain.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}
