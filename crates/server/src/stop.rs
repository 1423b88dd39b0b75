//! The server's stop signal for its listener threads: a flag, and an eventfd that a listener
//! polls next to its socket. A listener sleeps in `poll` until a client connects or the
//! server stops — no periodic wake-ups (on a VM each costs a timer exit, and a polling
//! listener also delays accepting by up to its period).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

pub(crate) struct Stop {
    flag: AtomicBool,
    /// Written once by `set` and never read: it stays readable, so every poller wakes.
    efd: OwnedFd,
}

impl Stop {
    pub fn new() -> io::Result<Stop> {
        // SAFETY: plain syscall; the result is checked before use.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor that nothing else owns.
        Ok(Stop { flag: AtomicBool::new(false), efd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Stops: sets the flag, then wakes every thread in [`Stop::wait_readable`].
    pub fn set(&self) {
        self.flag.store(true, Ordering::SeqCst);
        let one: u64 = 1;
        // SAFETY: writing 8 bytes from a valid u64 to an eventfd we own. It cannot fail short
        // of a counter overflow, which one write per stop never reaches.
        unsafe { libc::write(self.efd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// Accepts clients on the listener `fd` with `accept` until the server stops, handing each
    /// to `take`. `what` names the listener in logs.
    pub fn accept_each<S>(
        &self,
        fd: BorrowedFd<'_>,
        what: &str,
        mut accept: impl FnMut() -> io::Result<S>,
        mut take: impl FnMut(S),
    ) {
        while self.wait_readable(fd) {
            match accept() {
                Ok(s) => take(s),
                // Readiness can be spurious: wait again.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => {
                    // EMFILE and the like leave the listener readable: pause rather than spin.
                    tracing::warn!(error = %e, listener = what, "accept failed");
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            }
        }
    }

    /// Blocks until `fd` is readable (`true`: accept on it) or the server stops (`false`).
    pub fn wait_readable(&self, fd: BorrowedFd<'_>) -> bool {
        let mut fds = [
            libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: self.efd.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        ];
        loop {
            if self.is_set() {
                return false;
            }
            // SAFETY: `fds` is a valid array of two pollfds for the duration of the call.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
            if n > 0 {
                return !self.is_set();
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                tracing::warn!(error = %e, "poll on a listener failed");
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::sync::Arc;

    #[test]
    fn a_waiting_listener_wakes_for_a_client_and_for_stop() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let stop = Arc::new(Stop::new().unwrap());
        let _client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        assert!(stop.wait_readable(l.as_fd()), "a pending connection wakes the listener");
        l.accept().unwrap();
        let s2 = stop.clone();
        let t = std::thread::spawn(move || s2.wait_readable(l.as_fd()));
        std::thread::sleep(std::time::Duration::from_millis(20));
        stop.set();
        assert!(!t.join().unwrap(), "stop wakes a listener blocked in poll");
        assert!(stop.is_set());
    }
}
