//! Sans-I/O codec for the NBD protocol (NetworkBlockDevice/nbd `doc/proto.md`).
//!
//! [`ServerHandshake`] is the server side of the fixed-newstyle negotiation: feed it the
//! bytes received, it appends the bytes to send and says when the transmission phase starts.
//! [`parse_request`] / [`encode_simple_reply`] / [`encode_chunk_header`] cover the
//! transmission phase. Nothing here panics on network input: every malformed input is a
//! [`ProtoError`].

pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
pub const IHAVEOPT: u64 = 0x4948_4156_454F_5054;
pub const OPT_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
pub const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;

pub const FLAG_FIXED_NEWSTYLE: u16 = 1;
pub const FLAG_NO_ZEROES: u16 = 2;
pub const CFLAG_FIXED_NEWSTYLE: u32 = 1;
pub const CFLAG_NO_ZEROES: u32 = 2;

pub const OPT_EXPORT_NAME: u32 = 1;
pub const OPT_ABORT: u32 = 2;
pub const OPT_LIST: u32 = 3;
pub const OPT_STARTTLS: u32 = 5;
pub const OPT_INFO: u32 = 6;
pub const OPT_GO: u32 = 7;
pub const OPT_STRUCTURED_REPLY: u32 = 8;
pub const OPT_LIST_META_CONTEXT: u32 = 9;
pub const OPT_SET_META_CONTEXT: u32 = 10;
pub const REP_META_CONTEXT: u32 = 4;
/// The one metadata context this server offers, and its id.
pub const BASE_ALLOCATION: &str = "base:allocation";
pub const BASE_ALLOCATION_ID: u32 = 1;
pub const REPLY_TYPE_BLOCK_STATUS: u16 = 5;
pub const STATE_HOLE: u32 = 1;
pub const STATE_ZERO: u32 = 2;
pub const CMD_FLAG_REQ_ONE: u16 = 8;

pub const REP_ACK: u32 = 1;
pub const REP_SERVER: u32 = 2;
pub const REP_INFO: u32 = 3;
pub const REP_ERR_UNSUP: u32 = 1 | (1 << 31);
pub const REP_ERR_POLICY: u32 = 2 | (1 << 31);
pub const REP_ERR_INVALID: u32 = 3 | (1 << 31);
pub const REP_ERR_TLS_REQD: u32 = 5 | (1 << 31);
pub const REP_ERR_UNKNOWN: u32 = 6 | (1 << 31);

pub const INFO_EXPORT: u16 = 0;
pub const INFO_NAME: u16 = 1;
pub const INFO_DESCRIPTION: u16 = 2;
pub const INFO_BLOCK_SIZE: u16 = 3;

pub const TFLAG_HAS_FLAGS: u16 = 1;
pub const TFLAG_READ_ONLY: u16 = 2;
pub const TFLAG_SEND_FLUSH: u16 = 4;
pub const TFLAG_SEND_FUA: u16 = 8;
pub const TFLAG_ROTATIONAL: u16 = 16;
pub const TFLAG_SEND_TRIM: u16 = 32;
pub const TFLAG_SEND_WRITE_ZEROES: u16 = 64;
pub const TFLAG_SEND_DF: u16 = 128;
pub const TFLAG_CAN_MULTI_CONN: u16 = 256;
pub const TFLAG_SEND_CACHE: u16 = 1024;

pub const CMD_FLAG_FUA: u16 = 1;
pub const CMD_FLAG_NO_HOLE: u16 = 2;
pub const CMD_FLAG_DF: u16 = 4;

pub const REPLY_FLAG_DONE: u16 = 1;
pub const REPLY_TYPE_NONE: u16 = 0;
pub const REPLY_TYPE_OFFSET_DATA: u16 = 1;
pub const REPLY_TYPE_ERROR: u16 = (1 << 15) | 1;

/// Error values on the wire (proto.md, "Error values").
pub const EPERM: u32 = 1;
pub const EIO: u32 = 5;
pub const ENOMEM: u32 = 12;
pub const EINVAL: u32 = 22;
pub const ENOSPC: u32 = 28;
pub const EOVERFLOW: u32 = 75;
pub const ENOTSUP: u32 = 95;
pub const ESHUTDOWN: u32 = 108;

/// Largest payload this server accepts or advertises (NBD_INFO_BLOCK_SIZE maximum).
pub const MAX_PAYLOAD: u32 = 32 << 20;
/// Largest option payload accepted during the handshake.
pub const MAX_OPTION_LEN: u32 = 64 << 10;
pub const REQUEST_HEADER_LEN: usize = 28;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProtoError {
    BadMagic(u64),
    /// The client did not set NBD_FLAG_C_FIXED_NEWSTYLE or set unknown flags.
    BadClientFlags(u32),
    OptionTooLong(u32),
    /// NBD_OPT_EXPORT_NAME for an export that does not exist: the spec says close.
    UnknownExport(String),
    /// NBD_OPT_EXPORT_NAME before STARTTLS when TLS is required: the spec says close.
    TlsRequired,
    /// NBD_OPT_EXPORT_NAME for an export this client may not open (see
    /// [`ServerHandshake::set_refusals`]): that option has no error reply, so close.
    Refused(String),
    PayloadTooLong(u32),
}

impl std::fmt::Display for ProtoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProtoError::BadMagic(m) => write!(f, "bad magic {m:#x}"),
            ProtoError::BadClientFlags(x) => write!(f, "unsupported client flags {x:#x}"),
            ProtoError::OptionTooLong(n) => write!(f, "option payload of {n} bytes is too long"),
            ProtoError::UnknownExport(n) => write!(f, "unknown export `{n}`"),
            ProtoError::TlsRequired => write!(f, "NBD_OPT_EXPORT_NAME before TLS was started"),
            ProtoError::Refused(why) => write!(f, "export refused: {why}"),
            ProtoError::PayloadTooLong(n) => {
                write!(f, "payload of {n} bytes exceeds {MAX_PAYLOAD}")
            }
        }
    }
}
impl std::error::Error for ProtoError {}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}
fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}
fn be64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

/// What the handshake knows about one export.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportInfo {
    pub name: String,
    pub description: String,
    pub size: u64,
    pub read_only: bool,
    /// Minimum block size to advertise (1 or 512).
    pub min_block: u32,
    /// NBD_FLAG_ROTATIONAL: the backing device seeks (a hint for the client's elevator).
    pub rotational: bool,
    /// NBD_FLAG_CAN_MULTI_CONN: a flush on any connection covers the writes completed on
    /// every connection to this export (the server must guarantee it).
    pub multi_conn: bool,
}

impl ExportInfo {
    /// The transmission flags of this export; `structured`: structured replies were
    /// negotiated, without which NBD_FLAG_SEND_DF must not be set (proto.md).
    pub fn transmission_flags(&self, structured: bool) -> u16 {
        let mut f = TFLAG_HAS_FLAGS | TFLAG_SEND_FLUSH | TFLAG_SEND_FUA | TFLAG_SEND_CACHE;
        if self.read_only {
            f |= TFLAG_READ_ONLY;
        } else {
            f |= TFLAG_SEND_TRIM | TFLAG_SEND_WRITE_ZEROES;
        }
        if structured {
            f |= TFLAG_SEND_DF;
        }
        if self.rotational {
            f |= TFLAG_ROTATIONAL;
        }
        if self.multi_conn {
            f |= TFLAG_CAN_MULTI_CONN;
        }
        f
    }
}

/// The server's TLS policy (proto.md, "TLS support").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TlsMode {
    /// NOTLS: NBD_OPT_STARTTLS is answered NBD_REP_ERR_POLICY.
    #[default]
    Off,
    /// SELECTIVETLS with no TLS-only export: the client may upgrade, or not.
    On,
    /// FORCEDTLS: every option but STARTTLS and ABORT is refused with NBD_REP_ERR_TLS_REQD
    /// until TLS is up, and NBD_OPT_EXPORT_NAME closes the connection.
    Require,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HsState {
    ClientFlags,
    Options,
    Finished,
}

/// Progress of the handshake after [`ServerHandshake::process`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Send the output, then feed more input.
    NeedMore,
    /// Send the output; the transmission phase starts on this export.
    Done { export: usize, structured: bool },
    /// The client aborted (NBD_OPT_ABORT): send the output and close.
    Abort,
    /// NBD_OPT_STARTTLS was acknowledged: send the output in the clear, then run the TLS
    /// handshake (server side) on the connection; every byte after the consumed ones is TLS.
    /// Feed the decrypted bytes to `process` from then on.
    StartTls,
}

/// The server side of the fixed-newstyle handshake.
pub struct ServerHandshake {
    exports: Vec<ExportInfo>,
    state: HsState,
    no_zeroes: bool,
    structured: bool,
    /// Export name and whether base:allocation was selected by NBD_OPT_SET_META_CONTEXT.
    meta: Option<(String, bool)>,
    allocation: bool,
    tls_mode: TlsMode,
    tls: bool,
    /// Per export: why this client may not open it (`None`: it may).
    refusals: Vec<Option<String>>,
}

impl ServerHandshake {
    /// Starts a handshake; the returned bytes (the greeting) go out first.
    pub fn new(exports: Vec<ExportInfo>) -> (Self, Vec<u8>) {
        Self::with_tls(exports, TlsMode::Off)
    }

    /// Like [`ServerHandshake::new`], with a TLS policy.
    pub fn with_tls(exports: Vec<ExportInfo>, tls_mode: TlsMode) -> (Self, Vec<u8>) {
        let mut out = Vec::with_capacity(18);
        out.extend_from_slice(&NBDMAGIC.to_be_bytes());
        out.extend_from_slice(&IHAVEOPT.to_be_bytes());
        out.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
        (
            Self {
                exports,
                state: HsState::ClientFlags,
                no_zeroes: false,
                structured: false,
                meta: None,
                allocation: false,
                tls_mode,
                tls: false,
                refusals: Vec::new(),
            },
            out,
        )
    }

    /// Consumes as much of `input` as forms complete messages; returns how many bytes were
    /// consumed. Appends the bytes to send to `out`.
    pub fn process(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(usize, Progress), ProtoError> {
        let mut pos = 0;
        loop {
            let rest = &input[pos..];
            match self.state {
                HsState::Finished => return Ok((pos, Progress::NeedMore)),
                HsState::ClientFlags => {
                    if rest.len() < 4 {
                        return Ok((pos, Progress::NeedMore));
                    }
                    let flags = be32(rest);
                    if flags & CFLAG_FIXED_NEWSTYLE == 0
                        || flags & !(CFLAG_FIXED_NEWSTYLE | CFLAG_NO_ZEROES) != 0
                    {
                        return Err(ProtoError::BadClientFlags(flags));
                    }
                    self.no_zeroes = flags & CFLAG_NO_ZEROES != 0;
                    pos += 4;
                    self.state = HsState::Options;
                }
                HsState::Options => {
                    if rest.len() < 16 {
                        return Ok((pos, Progress::NeedMore));
                    }
                    let magic = be64(rest);
                    if magic != IHAVEOPT {
                        return Err(ProtoError::BadMagic(magic));
                    }
                    let opt = be32(&rest[8..]);
                    let len = be32(&rest[12..]);
                    if len > MAX_OPTION_LEN {
                        return Err(ProtoError::OptionTooLong(len));
                    }
                    let total = 16 + len as usize;
                    if rest.len() < total {
                        return Ok((pos, Progress::NeedMore));
                    }
                    let data = &rest[16..total];
                    pos += total;
                    match self.option(opt, data, out)? {
                        Some(Progress::StartTls) => return Ok((pos, Progress::StartTls)),
                        Some(p) => {
                            self.state = HsState::Finished;
                            return Ok((pos, p));
                        }
                        None => {}
                    }
                }
            }
        }
    }

    fn option(
        &mut self,
        opt: u32,
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<Option<Progress>, ProtoError> {
        if self.tls_mode == TlsMode::Require && !self.tls {
            match opt {
                OPT_STARTTLS | OPT_ABORT => {}
                OPT_EXPORT_NAME => return Err(ProtoError::TlsRequired),
                _ => {
                    opt_reply(out, opt, REP_ERR_TLS_REQD, b"TLS is required: send STARTTLS");
                    return Ok(None);
                }
            }
        }
        match opt {
            OPT_STARTTLS => {
                if self.tls_mode == TlsMode::Off {
                    opt_reply(out, opt, REP_ERR_POLICY, b"TLS is not enabled on this server");
                } else if self.tls || !data.is_empty() {
                    opt_reply(out, opt, REP_ERR_INVALID, b"TLS already started, or data sent");
                } else {
                    // proto.md: no negotiation state survives the upgrade.
                    self.structured = false;
                    self.meta = None;
                    self.tls = true;
                    opt_reply(out, opt, REP_ACK, &[]);
                    return Ok(Some(Progress::StartTls));
                }
                Ok(None)
            }
            OPT_EXPORT_NAME => {
                let name = String::from_utf8_lossy(data).into_owned();
                let Some(idx) = self.find(&name) else {
                    return Err(ProtoError::UnknownExport(name));
                };
                if let Some(why) = self.refusal(idx) {
                    return Err(ProtoError::Refused(why.to_string()));
                }
                let e = &self.exports[idx];
                out.extend_from_slice(&e.size.to_be_bytes());
                out.extend_from_slice(&e.transmission_flags(false).to_be_bytes());
                if !self.no_zeroes {
                    out.extend_from_slice(&[0u8; 124]);
                }
                Ok(Some(Progress::Done { export: idx, structured: false }))
            }
            OPT_ABORT => {
                opt_reply(out, opt, REP_ACK, &[]);
                Ok(Some(Progress::Abort))
            }
            OPT_LIST => {
                if !data.is_empty() {
                    opt_reply(out, opt, REP_ERR_INVALID, b"LIST takes no data");
                    return Ok(None);
                }
                for e in &self.exports {
                    let mut p = Vec::with_capacity(4 + e.name.len());
                    p.extend_from_slice(&(e.name.len() as u32).to_be_bytes());
                    p.extend_from_slice(e.name.as_bytes());
                    opt_reply(out, opt, REP_SERVER, &p);
                }
                opt_reply(out, opt, REP_ACK, &[]);
                Ok(None)
            }
            OPT_STRUCTURED_REPLY => {
                if !data.is_empty() {
                    opt_reply(out, opt, REP_ERR_INVALID, b"STRUCTURED_REPLY takes no data");
                    return Ok(None);
                }
                self.structured = true;
                opt_reply(out, opt, REP_ACK, &[]);
                Ok(None)
            }
            OPT_INFO | OPT_GO => {
                let Some((name, infos)) = parse_info_request(data) else {
                    opt_reply(out, opt, REP_ERR_INVALID, b"malformed INFO/GO request");
                    return Ok(None);
                };
                let Some(idx) = self.find(&name) else {
                    opt_reply(out, opt, REP_ERR_UNKNOWN, b"no such export");
                    return Ok(None);
                };
                if let Some(why) = self.refusal(idx) {
                    opt_reply(out, opt, REP_ERR_POLICY, why.as_bytes());
                    return Ok(None);
                }
                let e = &self.exports[idx];
                let mut p = Vec::with_capacity(12);
                p.extend_from_slice(&INFO_EXPORT.to_be_bytes());
                p.extend_from_slice(&e.size.to_be_bytes());
                p.extend_from_slice(&e.transmission_flags(self.structured).to_be_bytes());
                opt_reply(out, opt, REP_INFO, &p);
                let mut p = Vec::with_capacity(14);
                p.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
                p.extend_from_slice(&e.min_block.to_be_bytes());
                p.extend_from_slice(&4096u32.to_be_bytes());
                p.extend_from_slice(&MAX_PAYLOAD.to_be_bytes());
                opt_reply(out, opt, REP_INFO, &p);
                for info in infos {
                    let (ty, s) = match info {
                        INFO_NAME => (INFO_NAME, e.name.as_bytes()),
                        INFO_DESCRIPTION => (INFO_DESCRIPTION, e.description.as_bytes()),
                        _ => continue,
                    };
                    let mut p = Vec::with_capacity(2 + s.len());
                    p.extend_from_slice(&ty.to_be_bytes());
                    p.extend_from_slice(s);
                    opt_reply(out, opt, REP_INFO, &p);
                }
                opt_reply(out, opt, REP_ACK, &[]);
                if opt == OPT_GO {
                    self.allocation = matches!(&self.meta, Some((n, true)) if *n == name);
                    Ok(Some(Progress::Done { export: idx, structured: self.structured }))
                } else {
                    Ok(None)
                }
            }
            OPT_LIST_META_CONTEXT | OPT_SET_META_CONTEXT => {
                if opt == OPT_SET_META_CONTEXT && !self.structured {
                    opt_reply(out, opt, REP_ERR_INVALID, b"structured replies not negotiated");
                    return Ok(None);
                }
                let Some((name, queries)) = parse_meta_request(data) else {
                    opt_reply(out, opt, REP_ERR_INVALID, b"malformed meta context request");
                    return Ok(None);
                };
                if self.find(&name).is_none() {
                    opt_reply(out, opt, REP_ERR_UNKNOWN, b"no such export");
                    return Ok(None);
                }
                // proto.md: an empty LIST query list means "all contexts"; "base:" lists
                // every context of the namespace.
                let hit = if opt == OPT_LIST_META_CONTEXT && queries.is_empty() {
                    true
                } else {
                    queries.iter().any(|q| {
                        q == BASE_ALLOCATION || (opt == OPT_LIST_META_CONTEXT && q == "base:")
                    })
                };
                if hit {
                    let mut p = BASE_ALLOCATION_ID.to_be_bytes().to_vec();
                    p.extend_from_slice(BASE_ALLOCATION.as_bytes());
                    opt_reply(out, opt, REP_META_CONTEXT, &p);
                }
                if opt == OPT_SET_META_CONTEXT {
                    self.meta = Some((name, hit));
                }
                opt_reply(out, opt, REP_ACK, &[]);
                Ok(None)
            }
            _ => {
                opt_reply(out, opt, REP_ERR_UNSUP, b"option not supported");
                Ok(None)
            }
        }
    }

    /// Why export `idx` is refused to this client, if it is.
    fn refusal(&self, idx: usize) -> Option<&str> {
        self.refusals.get(idx).and_then(|r| r.as_deref())
    }

    fn find(&self, name: &str) -> Option<usize> {
        if name.is_empty() && !self.exports.is_empty() {
            // The empty name selects the default export (the first).
            return self.exports.iter().position(|e| e.name.is_empty()).or(Some(0));
        }
        self.exports.iter().position(|e| e.name == name)
    }
}

fn parse_meta_request(data: &[u8]) -> Option<(String, Vec<String>)> {
    let nlen = be32(data.get(..4)?) as usize;
    let name = data.get(4..4usize.checked_add(nlen)?)?;
    let mut rest = &data[4 + nlen..];
    let n = be32(rest.get(..4)?) as usize;
    rest = &rest[4..];
    let mut queries = Vec::new();
    for _ in 0..n {
        let qlen = be32(rest.get(..4)?) as usize;
        let q = rest.get(4..4usize.checked_add(qlen)?)?;
        queries.push(String::from_utf8_lossy(q).into_owned());
        rest = &rest[4 + qlen..];
    }
    if !rest.is_empty() {
        return None;
    }
    Some((String::from_utf8_lossy(name).into_owned(), queries))
}

impl ServerHandshake {
    /// After `Progress::Done`: whether base:allocation was negotiated for the chosen export
    /// (then NBD_CMD_BLOCK_STATUS is allowed, with context id [`BASE_ALLOCATION_ID`]).
    pub fn base_allocation(&self) -> bool {
        self.allocation
    }

    /// Which exports this client may open, in export order: `Some(reason)` refuses one
    /// (NBD_OPT_GO and NBD_OPT_INFO answer NBD_REP_ERR_POLICY with the reason,
    /// NBD_OPT_EXPORT_NAME fails with [`ProtoError::Refused`]). Missing entries allow.
    /// The server may change it between calls to [`ServerHandshake::process`] (access
    /// lists once TLS has named the client, connection limits as they fill).
    pub fn set_refusals(&mut self, refusals: Vec<Option<String>>) {
        self.refusals = refusals;
    }

    /// Whether NBD_OPT_STARTTLS was acknowledged on this connection.
    pub fn tls_started(&self) -> bool {
        self.tls
    }
}

fn parse_info_request(data: &[u8]) -> Option<(String, Vec<u16>)> {
    let nlen = be32(data.get(..4)?) as usize;
    let name = data.get(4..4usize.checked_add(nlen)?)?;
    let rest = &data[4 + nlen..];
    let n = be16(rest.get(..2)?) as usize;
    let reqs = rest.get(2..)?;
    if reqs.len() != n * 2 {
        return None;
    }
    let infos = reqs.chunks_exact(2).map(be16).collect();
    Some((String::from_utf8_lossy(name).into_owned(), infos))
}

/// Appends one option reply.
pub fn opt_reply(out: &mut Vec<u8>, opt: u32, rep: u32, data: &[u8]) {
    out.extend_from_slice(&OPT_REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&opt.to_be_bytes());
    out.extend_from_slice(&rep.to_be_bytes());
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(data);
}

/// A transmission-phase command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    Read,
    Write,
    Disc,
    Flush,
    Trim,
    Cache,
    WriteZeroes,
    BlockStatus,
    /// A command type this server does not implement: reply EINVAL.
    Unknown(u16),
}

impl Command {
    pub fn from_u16(t: u16) -> Command {
        match t {
            0 => Command::Read,
            1 => Command::Write,
            2 => Command::Disc,
            3 => Command::Flush,
            4 => Command::Trim,
            5 => Command::Cache,
            6 => Command::WriteZeroes,
            7 => Command::BlockStatus,
            t => Command::Unknown(t),
        }
    }
}

/// A request header (28 bytes on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestHeader {
    pub flags: u16,
    pub command: Command,
    pub handle: u64,
    pub offset: u64,
    pub length: u32,
}

impl RequestHeader {
    /// Bytes of payload that follow the header (only writes carry one).
    pub fn payload_len(&self) -> usize {
        if self.command == Command::Write {
            self.length as usize
        } else {
            0
        }
    }

    pub fn encode(&self) -> [u8; REQUEST_HEADER_LEN] {
        let t = match self.command {
            Command::Read => 0,
            Command::Write => 1,
            Command::Disc => 2,
            Command::Flush => 3,
            Command::Trim => 4,
            Command::Cache => 5,
            Command::WriteZeroes => 6,
            Command::BlockStatus => 7,
            Command::Unknown(t) => t,
        };
        let mut b = [0u8; REQUEST_HEADER_LEN];
        b[..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
        b[4..6].copy_from_slice(&self.flags.to_be_bytes());
        b[6..8].copy_from_slice(&t.to_be_bytes());
        b[8..16].copy_from_slice(&self.handle.to_be_bytes());
        b[16..24].copy_from_slice(&self.offset.to_be_bytes());
        b[24..28].copy_from_slice(&self.length.to_be_bytes());
        b
    }
}

/// Parses a request header from exactly its 28 bytes (or more; only the first 28 are read).
/// A write whose payload is longer than [`MAX_PAYLOAD`] is a protocol error (the server
/// cannot skip it without buffering it), other commands are checked by the server.
pub fn parse_request_header(buf: &[u8]) -> Result<Option<RequestHeader>, ProtoError> {
    if buf.len() < REQUEST_HEADER_LEN {
        return Ok(None);
    }
    let magic = be32(buf);
    if magic != REQUEST_MAGIC {
        return Err(ProtoError::BadMagic(magic as u64));
    }
    let h = RequestHeader {
        flags: be16(&buf[4..]),
        command: Command::from_u16(be16(&buf[6..])),
        handle: be64(&buf[8..]),
        offset: be64(&buf[16..]),
        length: be32(&buf[24..]),
    };
    if h.command == Command::Write && h.length > MAX_PAYLOAD {
        return Err(ProtoError::PayloadTooLong(h.length));
    }
    Ok(Some(h))
}

/// Parses one whole request (header and write payload) from the front of `buf`: `Ok(None)`
/// if more bytes are needed, else the header, the payload range in `buf` and bytes consumed.
pub fn parse_request(
    buf: &[u8],
) -> Result<Option<(RequestHeader, std::ops::Range<usize>, usize)>, ProtoError> {
    let Some(h) = parse_request_header(buf)? else { return Ok(None) };
    let end = REQUEST_HEADER_LEN + h.payload_len();
    if buf.len() < end {
        return Ok(None);
    }
    Ok(Some((h, REQUEST_HEADER_LEN..end, end)))
}

/// Appends a simple reply header (then, for a successful read, the caller appends the data).
pub fn encode_simple_reply(out: &mut Vec<u8>, handle: u64, error: u32) {
    out.extend_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&error.to_be_bytes());
    out.extend_from_slice(&handle.to_be_bytes());
}

/// Appends a structured reply chunk header; `length` is the payload length that follows.
pub fn encode_chunk_header(out: &mut Vec<u8>, flags: u16, ty: u16, handle: u64, length: u32) {
    out.extend_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&ty.to_be_bytes());
    out.extend_from_slice(&handle.to_be_bytes());
    out.extend_from_slice(&length.to_be_bytes());
}

/// Appends the header of an NBD_REPLY_TYPE_OFFSET_DATA chunk for `data_len` bytes at `offset`
/// (the caller appends the data); `done` marks the reply's final chunk. A read may be answered
/// in several such chunks, in any order, as its pieces become ready.
pub fn encode_offset_data_header(
    out: &mut Vec<u8>,
    done: bool,
    handle: u64,
    offset: u64,
    data_len: u32,
) {
    encode_chunk_header(
        out,
        if done { REPLY_FLAG_DONE } else { 0 },
        REPLY_TYPE_OFFSET_DATA,
        handle,
        data_len.saturating_add(8),
    );
    out.extend_from_slice(&offset.to_be_bytes());
}

/// Appends a final NBD_REPLY_TYPE_ERROR chunk.
pub fn encode_error_chunk(out: &mut Vec<u8>, handle: u64, error: u32, msg: &str) {
    let msg = &msg.as_bytes()[..msg.len().min(4096)];
    encode_chunk_header(out, REPLY_FLAG_DONE, REPLY_TYPE_ERROR, handle, 6 + msg.len() as u32);
    out.extend_from_slice(&error.to_be_bytes());
    out.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    out.extend_from_slice(msg);
}

/// Appends a final NBD_REPLY_TYPE_BLOCK_STATUS chunk: (length, status flags) extents.
pub fn encode_block_status(out: &mut Vec<u8>, handle: u64, context: u32, extents: &[(u32, u32)]) {
    let len = 4 + 8 * extents.len() as u32;
    encode_chunk_header(out, REPLY_FLAG_DONE, REPLY_TYPE_BLOCK_STATUS, handle, len);
    out.extend_from_slice(&context.to_be_bytes());
    for (l, f) in extents {
        out.extend_from_slice(&l.to_be_bytes());
        out.extend_from_slice(&f.to_be_bytes());
    }
}

#[cfg(test)]
mod tests;
