//! The server's stop signal for its event loops (the gate, the control loop): a flag, and an
//! eventfd that each loop polls next to its sockets. A loop sleeps in `poll` until a client
//! does something, a deadline passes or the server stops — no periodic wake-ups (on a VM
//! each costs a timer exit).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
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

    /// The eventfd, readable once the server stops (for a caller's own poll set).
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        self.efd.as_raw_fd()
    }

    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Stops: sets the flag, then wakes every loop polling [`Stop::raw_fd`].
    pub fn set(&self) {
        self.flag.store(true, Ordering::SeqCst);
        let one: u64 = 1;
        // SAFETY: writing 8 bytes from a valid u64 to an eventfd we own. It cannot fail short
        // of a counter overflow, which one write per stop never reaches.
        unsafe { libc::write(self.efd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_makes_the_eventfd_readable() {
        let stop = Stop::new().unwrap();
        let mut fds = [libc::pollfd { fd: stop.raw_fd(), events: libc::POLLIN, revents: 0 }];
        // SAFETY: one valid pollfd.
        assert_eq!(unsafe { libc::poll(fds.as_mut_ptr(), 1, 0) }, 0);
        stop.set();
        // SAFETY: as above.
        assert_eq!(unsafe { libc::poll(fds.as_mut_ptr(), 1, 0) }, 1);
        assert!(stop.is_set());
    }
}
