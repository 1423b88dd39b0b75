//! The server side of the handshake, fed arbitrary client bytes in arbitrary fragments.
#![no_main]

use elevator_nbd::{ExportInfo, Progress, ServerHandshake, TlsMode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&cuts, data)) = data.split_first() else { return };
    let exports = vec![
        ExportInfo {
            name: "a".into(),
            description: "first".into(),
            size: 1 << 20,
            read_only: false,
            min_block: 1,
            rotational: true,
            multi_conn: true,
        },
        ExportInfo {
            name: "b".into(),
            description: String::new(),
            size: 0,
            read_only: true,
            min_block: 512,
            rotational: false,
            multi_conn: false,
        },
    ];
    let mode = [TlsMode::Off, TlsMode::On, TlsMode::Require][usize::from(cuts >> 4) % 3];
    let (mut hs, _greeting) = ServerHandshake::with_tls(exports, mode);
    if cuts & 8 != 0 {
        hs.set_refusals(vec![None, Some("not for you".into())]);
    }
    let mut buf = Vec::new();
    let mut out = Vec::new();
    // Fragments of 1..=16 bytes, their sizes drawn from the first byte.
    let step = usize::from(cuts % 16) + 1;
    for chunk in data.chunks(step) {
        buf.extend_from_slice(chunk);
        match hs.process(&buf, &mut out) {
            Ok((used, p)) => {
                assert!(used <= buf.len());
                buf.drain(..used);
                // After STARTTLS the bytes would be decrypted first: go on in the clear.
                if !matches!(p, Progress::NeedMore | Progress::StartTls) {
                    return;
                }
            }
            Err(_) => return,
        }
    }
});
