use super::*;
use proptest::prelude::*;

fn export(name: &str) -> ExportInfo {
    ExportInfo {
        name: name.into(),
        description: "d".into(),
        size: 1 << 20,
        read_only: false,
        min_block: 1,
        rotational: false,
        multi_conn: true,
    }
}

fn opt(o: u32, data: &[u8]) -> Vec<u8> {
    let mut v = IHAVEOPT.to_be_bytes().to_vec();
    v.extend_from_slice(&o.to_be_bytes());
    v.extend_from_slice(&(data.len() as u32).to_be_bytes());
    v.extend_from_slice(data);
    v
}

fn go_data(name: &str, infos: &[u16]) -> Vec<u8> {
    let mut v = (name.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(name.as_bytes());
    v.extend_from_slice(&(infos.len() as u16).to_be_bytes());
    for i in infos {
        v.extend_from_slice(&i.to_be_bytes());
    }
    v
}

/// Splits option replies into (option, type, data).
fn replies(mut b: &[u8]) -> Vec<(u32, u32, Vec<u8>)> {
    let mut r = vec![];
    while !b.is_empty() {
        assert_eq!(be64(b), OPT_REPLY_MAGIC);
        let len = be32(&b[16..]) as usize;
        r.push((be32(&b[8..]), be32(&b[12..]), b[20..20 + len].to_vec()));
        b = &b[20 + len..];
    }
    r
}

#[test]
fn greeting_and_go() {
    let (mut hs, greet) = ServerHandshake::new(vec![export("a"), export("b")]);
    assert_eq!(greet.len(), 18);
    assert_eq!(be64(&greet), NBDMAGIC);
    let mut input = 3u32.to_be_bytes().to_vec();
    input.extend(opt(OPT_STRUCTURED_REPLY, &[]));
    input.extend(opt(OPT_GO, &go_data("b", &[INFO_NAME, INFO_BLOCK_SIZE])));
    // Byte by byte: the state machine must cope with any fragmentation.
    let mut out = vec![];
    let mut buf = vec![];
    let mut done = None;
    for byte in input {
        buf.push(byte);
        let (used, p) = hs.process(&buf, &mut out).unwrap();
        buf.drain(..used);
        if p != Progress::NeedMore {
            done = Some(p);
        }
    }
    assert_eq!(done, Some(Progress::Done { export: 1, structured: true }));
    let r = replies(&out);
    assert_eq!(r[0], (OPT_STRUCTURED_REPLY, REP_ACK, vec![]));
    assert_eq!(r[1].1, REP_INFO);
    assert_eq!(be16(&r[1].2), INFO_EXPORT);
    assert_eq!(be64(&r[1].2[2..]), 1 << 20);
    assert!(r.iter().any(|x| x.1 == REP_INFO && be16(&x.2) == INFO_NAME && &x.2[2..] == b"b"));
    assert_eq!(r.last().unwrap().1, REP_ACK);
}

#[test]
fn flags_depend_on_structured_replies_and_the_export() {
    let mut e = export("a");
    let plain = e.transmission_flags(false);
    assert_eq!(plain & TFLAG_SEND_DF, 0, "DF only with structured replies");
    assert_ne!(plain & TFLAG_CAN_MULTI_CONN, 0);
    assert_eq!(plain & TFLAG_ROTATIONAL, 0);
    assert_ne!(e.transmission_flags(true) & TFLAG_SEND_DF, 0);
    e.rotational = true;
    assert_ne!(e.transmission_flags(false) & TFLAG_ROTATIONAL, 0);
    // GO after STRUCTURED_REPLY advertises DF in NBD_INFO_EXPORT.
    let (mut hs, _) = ServerHandshake::new(vec![export("a")]);
    let mut input = 1u32.to_be_bytes().to_vec();
    input.extend(opt(OPT_STRUCTURED_REPLY, &[]));
    input.extend(opt(OPT_GO, &go_data("a", &[])));
    let mut out = vec![];
    hs.process(&input, &mut out).unwrap();
    let r = replies(&out);
    assert_ne!(be16(&r[1].2[10..]) & TFLAG_SEND_DF, 0);
}

#[test]
fn refused_exports_get_a_policy_error_and_export_name_closes() {
    let (mut hs, _) = ServerHandshake::new(vec![export("a"), export("b")]);
    hs.set_refusals(vec![None, Some("uid 1000 is not allowed".into())]);
    let mut input = 1u32.to_be_bytes().to_vec();
    input.extend(opt(OPT_GO, &go_data("b", &[])));
    input.extend(opt(OPT_INFO, &go_data("b", &[])));
    input.extend(opt(OPT_GO, &go_data("a", &[])));
    let mut out = vec![];
    let (_, p) = hs.process(&input, &mut out).unwrap();
    assert_eq!(p, Progress::Done { export: 0, structured: false });
    let r = replies(&out);
    assert_eq!((r[0].1, r[0].2.as_slice()), (REP_ERR_POLICY, &b"uid 1000 is not allowed"[..]));
    assert_eq!(r[1].1, REP_ERR_POLICY);
    let (mut hs, _) = ServerHandshake::new(vec![export("a")]);
    hs.set_refusals(vec![Some("no".into())]);
    let mut input = 1u32.to_be_bytes().to_vec();
    input.extend(opt(OPT_EXPORT_NAME, b"a"));
    assert_eq!(hs.process(&input, &mut vec![]), Err(ProtoError::Refused("no".into())));
}

#[test]
fn list_unknown_unsup_and_abort() {
    let (mut hs, _) = ServerHandshake::new(vec![export("a"), export("b")]);
    let mut input = 1u32.to_be_bytes().to_vec();
    input.extend(opt(OPT_LIST, &[]));
    input.extend(opt(OPT_GO, &go_data("zz", &[])));
    input.extend(opt(OPT_INFO, b"\0\0"));
    input.extend(opt(99, b"x"));
    input.extend(opt(OPT_ABORT, &[]));
    let mut out = vec![];
    let (used, p) = hs.process(&input, &mut out).unwrap();
    assert_eq!((used, p), (input.len(), Progress::Abort));
    let types: Vec<u32> = replies(&out).iter().map(|r| r.1).collect();
    assert_eq!(
        types,
        vec![
            REP_SERVER,
            REP_SERVER,
            REP_ACK,
            REP_ERR_UNKNOWN,
            REP_ERR_INVALID,
            REP_ERR_UNSUP,
            REP_ACK
        ]
    );
}

#[test]
fn meta_contexts() {
    let q = |name: &str, qs: &[&str]| {
        let mut v = (name.len() as u32).to_be_bytes().to_vec();
        v.extend_from_slice(name.as_bytes());
        v.extend_from_slice(&(qs.len() as u32).to_be_bytes());
        for x in qs {
            v.extend_from_slice(&(x.len() as u32).to_be_bytes());
            v.extend_from_slice(x.as_bytes());
        }
        v
    };
    let (mut hs, _) = ServerHandshake::new(vec![export("a")]);
    let mut input = 1u32.to_be_bytes().to_vec();
    input.extend(opt(OPT_SET_META_CONTEXT, &q("a", &[BASE_ALLOCATION])));
    input.extend(opt(OPT_STRUCTURED_REPLY, &[]));
    input.extend(opt(OPT_LIST_META_CONTEXT, &q("a", &[])));
    input.extend(opt(OPT_SET_META_CONTEXT, &q("a", &["qemu:dirty-bitmap:x", BASE_ALLOCATION])));
    input.extend(opt(OPT_SET_META_CONTEXT, b"\0\0\0\x01a\0\0\0\x05"));
    input.extend(opt(OPT_GO, &go_data("a", &[])));
    let mut out = vec![];
    let (_, p) = hs.process(&input, &mut out).unwrap();
    assert_eq!(p, Progress::Done { export: 0, structured: true });
    assert!(hs.base_allocation());
    let types: Vec<u32> = replies(&out).iter().map(|r| r.1).take(7).collect();
    assert_eq!(
        types,
        vec![
            REP_ERR_INVALID,
            REP_ACK,
            REP_META_CONTEXT,
            REP_ACK,
            REP_META_CONTEXT,
            REP_ACK,
            REP_ERR_INVALID
        ]
    );
}

#[test]
fn export_name_old_style_finish() {
    let (mut hs, _) = ServerHandshake::new(vec![export("a")]);
    let mut input = 1u32.to_be_bytes().to_vec();
    input.extend(opt(OPT_EXPORT_NAME, b"a"));
    let mut out = vec![];
    let (_, p) = hs.process(&input, &mut out).unwrap();
    assert_eq!(p, Progress::Done { export: 0, structured: false });
    assert_eq!(out.len(), 8 + 2 + 124);
    let (mut hs, _) = ServerHandshake::new(vec![export("a")]);
    let mut input = 1u32.to_be_bytes().to_vec();
    input.extend(opt(OPT_EXPORT_NAME, b"nope"));
    assert!(matches!(hs.process(&input, &mut vec![]), Err(ProtoError::UnknownExport(_))));
}

#[test]
fn malformed_handshake() {
    let (mut hs, _) = ServerHandshake::new(vec![export("a")]);
    assert_eq!(hs.process(&0u32.to_be_bytes(), &mut vec![]), Err(ProtoError::BadClientFlags(0)));
    let (mut hs, _) = ServerHandshake::new(vec![export("a")]);
    let mut input = 1u32.to_be_bytes().to_vec();
    input.extend_from_slice(&[0xff; 16]);
    assert!(matches!(hs.process(&input, &mut vec![]), Err(ProtoError::BadMagic(_))));
    let (mut hs, _) = ServerHandshake::new(vec![export("a")]);
    let mut input = 1u32.to_be_bytes().to_vec();
    input.extend_from_slice(&IHAVEOPT.to_be_bytes());
    input.extend_from_slice(&OPT_GO.to_be_bytes());
    input.extend_from_slice(&u32::MAX.to_be_bytes());
    assert_eq!(hs.process(&input, &mut vec![]), Err(ProtoError::OptionTooLong(u32::MAX)));
}

#[test]
fn requests() {
    let h = RequestHeader {
        flags: CMD_FLAG_FUA,
        command: Command::Write,
        handle: 7,
        offset: 4096,
        length: 3,
    };
    let mut b = h.encode().to_vec();
    assert_eq!(parse_request(&b).unwrap(), None, "payload missing");
    b.extend_from_slice(b"abc");
    let (p, range, used) = parse_request(&b).unwrap().unwrap();
    assert_eq!((p, &b[range], used), (h, &b"abc"[..], 31));
    assert_eq!(parse_request(&b[..27]).unwrap(), None, "truncated header");
    let mut bad = b.clone();
    bad[0] = 0;
    assert!(matches!(parse_request(&bad), Err(ProtoError::BadMagic(_))));
    let unk = RequestHeader { command: Command::Unknown(77), ..h }.encode();
    assert_eq!(parse_request(&unk).unwrap().unwrap().0.command, Command::Unknown(77));
    let big = RequestHeader { length: MAX_PAYLOAD + 1, ..h }.encode();
    assert_eq!(parse_request(&big), Err(ProtoError::PayloadTooLong(MAX_PAYLOAD + 1)));
    // A big read is the server's business (EINVAL), not a protocol error.
    let big_read = RequestHeader { command: Command::Read, length: u32::MAX, ..h }.encode();
    assert!(parse_request(&big_read).unwrap().is_some());
}

#[test]
fn replies_encode() {
    let mut out = vec![];
    encode_simple_reply(&mut out, 9, EPERM);
    assert_eq!(out.len(), 16);
    assert_eq!(be32(&out[4..]), EPERM);
    out.clear();
    encode_offset_data_header(&mut out, true, 9, 512, 4);
    assert_eq!((out.len(), be32(&out[16..])), (28, 12));
    assert_eq!(be16(&out[4..]), REPLY_FLAG_DONE);
    out.clear();
    encode_offset_data_header(&mut out, false, 9, 512, 4);
    assert_eq!((be16(&out[4..]), be16(&out[6..])), (0, REPLY_TYPE_OFFSET_DATA));
    out.clear();
    encode_error_chunk(&mut out, 9, EIO, "boom");
    assert_eq!(be16(&out[6..]), REPLY_TYPE_ERROR);
    assert_eq!(out.len(), 20 + 6 + 4);
}

#[test]
fn starttls_modes() {
    let start = |mode| {
        let (hs, _) = ServerHandshake::with_tls(vec![export("a")], mode);
        hs
    };
    // NOTLS: STARTTLS is refused by policy, the rest goes on.
    let mut hs = start(TlsMode::Off);
    let mut input = 1u32.to_be_bytes().to_vec();
    input.extend(opt(OPT_STARTTLS, &[]));
    let mut out = vec![];
    assert_eq!(hs.process(&input, &mut out).unwrap().1, Progress::NeedMore);
    assert_eq!(replies(&out)[0].1, REP_ERR_POLICY);
    // FORCEDTLS: options before STARTTLS get TLS_REQD, EXPORT_NAME closes; after the upgrade
    // everything works and a second STARTTLS is invalid.
    let mut hs = start(TlsMode::Require);
    let mut input = 1u32.to_be_bytes().to_vec();
    input.extend(opt(OPT_LIST, &[]));
    input.extend(opt(OPT_GO, &go_data("a", &[])));
    input.extend(opt(77, &[]));
    input.extend(opt(OPT_STARTTLS, &[]));
    input.extend(opt(OPT_LIST, &[]));
    let mut out = vec![];
    let (used, p) = hs.process(&input, &mut out).unwrap();
    assert_eq!(p, Progress::StartTls);
    assert_eq!(used, input.len() - 16, "stops right after STARTTLS");
    let types: Vec<u32> = replies(&out).iter().map(|r| r.1).collect();
    assert_eq!(types, [REP_ERR_TLS_REQD, REP_ERR_TLS_REQD, REP_ERR_TLS_REQD, REP_ACK]);
    assert!(hs.tls_started());
    let mut out = vec![];
    let mut rest = input[used..].to_vec();
    rest.extend(opt(OPT_STARTTLS, &[]));
    rest.extend(opt(OPT_GO, &go_data("a", &[])));
    let (_, p) = hs.process(&rest, &mut out).unwrap();
    assert_eq!(p, Progress::Done { export: 0, structured: false });
    let types: Vec<u32> = replies(&out).iter().map(|r| r.1).collect();
    assert_eq!(types[..3], [REP_SERVER, REP_ACK, REP_ERR_INVALID]);
    let mut hs = start(TlsMode::Require);
    let mut input = 1u32.to_be_bytes().to_vec();
    input.extend(opt(OPT_EXPORT_NAME, b"a"));
    assert_eq!(hs.process(&input, &mut vec![]), Err(ProtoError::TlsRequired));
    // SELECTIVETLS: no upgrade needed; STARTTLS with data is invalid; structured replies
    // negotiated before the upgrade are forgotten.
    let mut hs = start(TlsMode::On);
    let mut input = 1u32.to_be_bytes().to_vec();
    input.extend(opt(OPT_STARTTLS, b"x"));
    input.extend(opt(OPT_STRUCTURED_REPLY, &[]));
    input.extend(opt(OPT_STARTTLS, &[]));
    input.extend(opt(OPT_GO, &go_data("a", &[])));
    let mut out = vec![];
    let (used, p) = hs.process(&input, &mut out).unwrap();
    assert_eq!(p, Progress::StartTls);
    assert_eq!(replies(&out)[0].1, REP_ERR_INVALID);
    let (_, p) = hs.process(&input[used..], &mut vec![]).unwrap();
    assert_eq!(p, Progress::Done { export: 0, structured: false });
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512), prefix in any::<bool>()) {
        let _ = parse_request(&data);
        let (mut hs, _) = ServerHandshake::new(vec![export("a")]);
        let mut input = if prefix { 1u32.to_be_bytes().to_vec() } else { vec![] };
        if prefix { input.extend_from_slice(&IHAVEOPT.to_be_bytes()); }
        input.extend_from_slice(&data);
        let mut out = vec![];
        if let Ok((used, _)) = hs.process(&input, &mut out) {
            prop_assert!(used <= input.len());
        }
    }

    #[test]
    fn arbitrary_options_never_panic(o in 0u32..12, data in proptest::collection::vec(any::<u8>(), 0..64)) {
        let (mut hs, _) = ServerHandshake::new(vec![export("a")]);
        let mut input = 1u32.to_be_bytes().to_vec();
        input.extend(opt(o, &data));
        let _ = hs.process(&input, &mut vec![]);
    }
}

/// Option payloads a fuzzer would take a long time to find: well-formed GO/INFO/meta requests
/// for known and unknown exports, and random bytes.
fn option_data() -> impl Strategy<Value = (u32, Vec<u8>)> {
    let name = prop_oneof![Just("a".to_string()), Just(String::new()), Just("zz".to_string())];
    let infos = proptest::collection::vec(0u16..6, 0..4);
    let queries = proptest::collection::vec(
        prop_oneof![Just("base:allocation".to_string()), Just("base:".to_string()), "[a-z:]{0,12}"],
        0..3,
    );
    prop_oneof![
        (prop_oneof![Just(OPT_GO), Just(OPT_INFO)], name.clone(), infos)
            .prop_map(|(o, n, i)| (o, go_data(&n, &i))),
        (prop_oneof![Just(OPT_LIST_META_CONTEXT), Just(OPT_SET_META_CONTEXT)], name, queries)
            .prop_map(|(o, n, qs)| {
                let mut v = (n.len() as u32).to_be_bytes().to_vec();
                v.extend_from_slice(n.as_bytes());
                v.extend_from_slice(&(qs.len() as u32).to_be_bytes());
                for q in qs {
                    v.extend_from_slice(&(q.len() as u32).to_be_bytes());
                    v.extend_from_slice(q.as_bytes());
                }
                (o, v)
            }),
        (
            prop_oneof![Just(OPT_LIST), Just(OPT_STRUCTURED_REPLY), Just(4u32), Just(77u32)],
            proptest::collection::vec(any::<u8>(), 0..3)
        ),
        (0u32..16, proptest::collection::vec(any::<u8>(), 0..40)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Any sequence of options, cut into any fragments: the server answers each option it
    /// consumed with well-formed option replies for that option (ending in an ACK or an
    /// error), in order, until GO/ABORT/EXPORT_NAME ends the negotiation.
    #[test]
    fn option_sequences_get_well_formed_replies(
        opts in proptest::collection::vec(option_data(), 1..12),
        step in 1usize..40,
    ) {
        let (mut hs, _) = ServerHandshake::new(vec![export("a"), export("b")]);
        let mut input = 3u32.to_be_bytes().to_vec();
        for (o, d) in &opts {
            input.extend(opt(*o, d));
        }
        let (mut buf, mut out) = (vec![], vec![]);
        let mut end = None;
        for chunk in input.chunks(step) {
            buf.extend_from_slice(chunk);
            match hs.process(&buf, &mut out) {
                Ok((used, p)) => {
                    prop_assert!(used <= buf.len());
                    buf.drain(..used);
                    if p != Progress::NeedMore {
                        end = Some(p);
                        break;
                    }
                }
                Err(e) => {
                    end = Some(Progress::Abort);
                    prop_assert!(matches!(e, ProtoError::UnknownExport(_)), "{e}");
                    break;
                }
            }
        }
        // EXPORT_NAME's reply is not an option reply: check the others only.
        let last_is_export_name = matches!(end, Some(Progress::Done { .. }))
            && opts.iter().any(|(o, _)| *o == OPT_EXPORT_NAME);
        if !last_is_export_name {
            let mut answered = opts.iter().map(|(o, _)| *o);
            let mut current = None;
            for (o, ty, data) in replies(&out) {
                if current != Some(o) {
                    let next = answered.next();
                    prop_assert_eq!(next, Some(o), "reply for an option not asked next");
                    current = Some(o);
                }
                if ty == REP_META_CONTEXT {
                    prop_assert!(data.len() > 4);
                }
                if ty == REP_ACK || ty & (1 << 31) != 0 {
                    current = None;
                }
            }
            prop_assert_eq!(current, None, "an option's replies did not end");
        }
    }

    /// Requests encoded back to back and cut anywhere parse back to themselves.
    #[test]
    fn request_streams_parse_back(
        reqs in proptest::collection::vec(
            (0u16..10, any::<u16>(), any::<u64>(), any::<u64>(), 0u32..2048), 1..20),
        step in 1usize..200,
    ) {
        let mut wire = vec![];
        let mut want = vec![];
        for (i, &(t, flags, handle, offset, length)) in reqs.iter().enumerate() {
            let h = RequestHeader { flags, command: Command::from_u16(t), handle, offset, length };
            wire.extend_from_slice(&h.encode());
            let payload: Vec<u8> = (0..h.payload_len()).map(|k| (k + i) as u8).collect();
            wire.extend_from_slice(&payload);
            want.push((h, payload));
        }
        let (mut buf, mut got) = (vec![], vec![]);
        for chunk in wire.chunks(step) {
            buf.extend_from_slice(chunk);
            while let Some((h, range, used)) = parse_request(&buf).unwrap() {
                got.push((h, buf[range].to_vec()));
                buf.drain(..used);
            }
        }
        prop_assert!(buf.is_empty());
        prop_assert_eq!(got, want);
    }
}
