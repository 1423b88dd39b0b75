//! The transmission-phase request parser, over a stream of arbitrary bytes.
#![no_main]

use elevator_nbd::{parse_request, REQUEST_HEADER_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while let Ok(Some((header, payload, used))) = parse_request(rest) {
        assert!(used >= REQUEST_HEADER_LEN && used <= rest.len());
        assert_eq!(payload.len(), header.payload_len());
        assert!(payload.end <= used);
        // Re-encoding the header gives back the bytes it came from.
        assert_eq!(&header.encode()[..], &rest[..REQUEST_HEADER_LEN]);
        rest = &rest[used..];
    }
});
