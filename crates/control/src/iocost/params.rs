//! The settings of blk-iocost: the `io.cost.qos` and `io.cost.model` lines of the root cgroup,
//! the `io.weight` lines of the others, the kernel's automatic parameters per device class
//! (`autop[]`), and the linear model's coefficients (`calc_lcoefs`). Parsed and range-checked
//! as `ioc_qos_write`, `ioc_cost_model_write` and `ioc_weight_write` do; an error names the
//! offending word.

/// One second of device time in vtime units (`VTIME_PER_SEC`, 2^37: sub-nanosecond grain and
/// days before wrap-around even at extreme vrates).
pub const VTIME_PER_SEC: u64 = 1 << 37;
pub const VTIME_PER_USEC: u64 = VTIME_PER_SEC / 1_000_000;
pub const VTIME_PER_NSEC: u64 = VTIME_PER_SEC / 1_000_000_000;
/// The bounds of vrate and of `io.cost.qos`'s `min`/`max` (`VRATE_MIN_PPM`, `VRATE_MAX_PPM`:
/// 1 % to 10000 %).
pub const VRATE_MIN_PPM: u32 = 10_000;
pub const VRATE_MAX_PPM: u32 = 100_000_000;
/// Weights of `io.weight` (`CGROUP_WEIGHT_MIN`, `_DFL`, `_MAX`).
pub const CGROUP_WEIGHT_MIN: u32 = 1;
pub const CGROUP_WEIGHT_DFL: u32 = 100;
pub const CGROUP_WEIGHT_MAX: u32 = 10_000;
/// Largest `rlat`/`wlat` accepted, in µs (the kernel keeps them in a u32; a target above a
/// minute is a typo, not a policy).
pub const IOCOST_LAT_MAX_US: u64 = 60_000_000;
/// Largest model coefficient accepted (bytes/s or IO/s): 2^40, a terabyte per second.
pub const IOCOST_COEF_MAX: u64 = 1 << 40;
/// The size of a model page (`IOC_PAGE_SIZE`).
pub const IOC_PAGE_SIZE: u64 = 4096;
/// Farther apart than this many pages (16 MiB), an IO counts as random (`LCOEF_RANDIO_PAGES`).
pub const LCOEF_RANDIO_PAGES: u64 = 4096;

/// `io.cost.qos` of one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoCostQos {
    /// `enable=1`: the controller runs on the device.
    pub enable: bool,
    /// `ctrl=user`: the parameters below were given, not taken from the device class.
    pub user: bool,
    /// Read latency percentile (`rpct`, in ppm: 95.00 % is 950000) and target (`rlat`, µs).
    pub rppm: u32,
    pub rlat_us: u64,
    pub wppm: u32,
    pub wlat_us: u64,
    /// vrate bounds in ppm of the model's rate (`min`, `max`).
    pub min_ppm: u32,
    pub max_ppm: u32,
}

impl IoCostQos {
    /// The device class's defaults, not enabled.
    pub fn auto(class: AutopClass) -> IoCostQos {
        let lat = class.lat_us();
        IoCostQos {
            enable: false,
            user: false,
            rppm: 0,
            rlat_us: lat,
            wppm: 0,
            wlat_us: lat,
            min_ppm: VRATE_MIN_PPM,
            max_ppm: VRATE_MAX_PPM,
        }
    }

    /// Applies the keys of an `io.cost.qos` line after `MAJ:MIN` (`enable=1 ctrl=user
    /// rpct=95 rlat=10000 ...`) to `self`, as `ioc_qos_write`: any parameter makes the
    /// settings the user's; `ctrl=auto` alone returns to the class's.
    pub fn parse_keys(words: &str, current: IoCostQos) -> Result<IoCostQos, String> {
        let mut q = current;
        let mut user = current.user;
        for tok in words.split_whitespace() {
            let (key, value) = tok
                .split_once('=')
                .ok_or_else(|| format!("io.cost.qos: `{tok}`: expected KEY=VALUE"))?;
            let bad = |what: &str| format!("io.cost.qos: `{tok}`: {what}");
            match key {
                "enable" => {
                    q.enable = value.parse::<u64>().map_err(|_| bad("expected 0 or 1"))? != 0
                }
                "ctrl" => match value {
                    "auto" => user = false,
                    "user" => user = true,
                    _ => return Err(bad("ctrl is `auto` or `user`")),
                },
                "rpct" | "wpct" => {
                    let v = parse_hundredths(value).ok_or_else(|| bad("expected a percentage"))?;
                    if v > 10_000 {
                        return Err(bad("the percentile must be 0 to 100"));
                    }
                    let ppm = (v * 100) as u32;
                    if key == "rpct" {
                        q.rppm = ppm
                    } else {
                        q.wppm = ppm
                    }
                    user = true;
                }
                "rlat" | "wlat" => {
                    let us: u64 = value.parse().map_err(|_| bad("expected microseconds"))?;
                    if us > IOCOST_LAT_MAX_US {
                        return Err(bad(&format!(
                            "at most {IOCOST_LAT_MAX_US} µs ({} s)",
                            IOCOST_LAT_MAX_US / 1_000_000
                        )));
                    }
                    if key == "rlat" {
                        q.rlat_us = us
                    } else {
                        q.wlat_us = us
                    }
                    user = true;
                }
                "min" | "max" => {
                    let v = parse_hundredths(value).ok_or_else(|| bad("expected a percentage"))?;
                    let ppm = v
                        .saturating_mul(100)
                        .clamp(u64::from(VRATE_MIN_PPM), u64::from(VRATE_MAX_PPM))
                        as u32;
                    if key == "min" {
                        q.min_ppm = ppm
                    } else {
                        q.max_ppm = ppm
                    }
                    user = true;
                }
                _ => return Err(bad(
                    "unknown key; io.cost.qos takes enable, ctrl, rpct, rlat, wpct, wlat, min, max",
                )),
            }
        }
        if q.min_ppm > q.max_ppm {
            return Err(format!(
                "io.cost.qos: min={}.{:02} is above max={}.{:02}",
                q.min_ppm / 10_000,
                q.min_ppm % 10_000 / 100,
                q.max_ppm / 10_000,
                q.max_ppm % 10_000 / 100
            ));
        }
        q.user = user;
        Ok(q)
    }
}

/// `io.cost.model`: the linear model's six figures (`ctrl=user model=linear rbps=...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoCostModel {
    pub user: bool,
    pub rbps: u64,
    pub rseqiops: u64,
    pub rrandiops: u64,
    pub wbps: u64,
    pub wseqiops: u64,
    pub wrandiops: u64,
}

impl IoCostModel {
    pub fn auto(class: AutopClass) -> IoCostModel {
        let [rbps, rseqiops, rrandiops, wbps, wseqiops, wrandiops] = class.i_lcoefs();
        IoCostModel { user: false, rbps, rseqiops, rrandiops, wbps, wseqiops, wrandiops }
    }

    /// Applies the keys of an `io.cost.model` line after `MAJ:MIN`, as
    /// `ioc_cost_model_write`.
    pub fn parse_keys(words: &str, current: IoCostModel) -> Result<IoCostModel, String> {
        let mut m = current;
        let mut user = current.user;
        for tok in words.split_whitespace() {
            let (key, value) = tok
                .split_once('=')
                .ok_or_else(|| format!("io.cost.model: `{tok}`: expected KEY=VALUE"))?;
            let bad = |what: &str| format!("io.cost.model: `{tok}`: {what}");
            let slot = match key {
                "ctrl" => {
                    match value {
                        "auto" => user = false,
                        "user" => user = true,
                        _ => return Err(bad("ctrl is `auto` or `user`")),
                    }
                    continue;
                }
                "model" => {
                    if value != "linear" {
                        return Err(bad("the only model is `linear`"));
                    }
                    continue;
                }
                "rbps" => &mut m.rbps,
                "rseqiops" => &mut m.rseqiops,
                "rrandiops" => &mut m.rrandiops,
                "wbps" => &mut m.wbps,
                "wseqiops" => &mut m.wseqiops,
                "wrandiops" => &mut m.wrandiops,
                _ => return Err(bad(
                    "unknown key; io.cost.model takes ctrl, model, rbps, rseqiops, rrandiops, wbps, wseqiops, wrandiops",
                )),
            };
            let v: u64 = value.parse().map_err(|_| bad("expected an integer"))?;
            if v > IOCOST_COEF_MAX {
                return Err(bad(&format!("at most {IOCOST_COEF_MAX}")));
            }
            *slot = v;
            user = true;
        }
        m.user = user;
        Ok(m)
    }

    /// The model's coefficients in vtime: per page, per sequential and per random IO, for
    /// reads then writes (`ioc_refresh_lcoefs`).
    pub fn lcoefs(&self) -> LinearCoefs {
        let (rpage, rseqio, rrandio) = calc_lcoefs(self.rbps, self.rseqiops, self.rrandiops);
        let (wpage, wseqio, wrandio) = calc_lcoefs(self.wbps, self.wseqiops, self.wrandiops);
        LinearCoefs { page: [rpage, wpage], seqio: [rseqio, wseqio], randio: [rrandio, wrandio] }
    }
}

/// Vtime cost per page and per IO, indexed by direction (0 read, 1 write).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinearCoefs {
    pub page: [u64; 2],
    pub seqio: [u64; 2],
    pub randio: [u64; 2],
}

/// `calc_lcoefs`: page cost `1 s / (bps / 4096)`, and the IO costs `1 s / iops` less a page.
pub fn calc_lcoefs(bps: u64, seqiops: u64, randiops: u64) -> (u64, u64, u64) {
    let page = if bps > 0 { VTIME_PER_SEC.div_ceil(bps.div_ceil(IOC_PAGE_SIZE)) } else { 0 };
    let per_io = |iops: u64| {
        if iops == 0 {
            return 0;
        }
        let v = VTIME_PER_SEC.div_ceil(iops);
        v.saturating_sub(page)
    };
    (page, per_io(seqiops), per_io(randiops))
}

/// The kernel's device classes for automatic parameters (`AUTOP_*`, `ioc_autop_idx`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum AutopClass {
    Hdd,
    /// A SATA SSD with broken NCQ: queue depth 1.
    SsdQd1,
    SsdDfl,
    SsdFast,
}

impl AutopClass {
    /// The class a device starts in: rotational, else queue depth 1, else the default SSD.
    pub fn of_device(rotational: bool, queue_depth: u32) -> AutopClass {
        if rotational {
            AutopClass::Hdd
        } else if queue_depth == 1 {
            AutopClass::SsdQd1
        } else {
            AutopClass::SsdDfl
        }
    }

    /// `rlat` and `wlat` of the class, µs.
    pub fn lat_us(self) -> u64 {
        match self {
            AutopClass::Hdd => 250_000,
            AutopClass::SsdQd1 | AutopClass::SsdDfl => 25_000,
            AutopClass::SsdFast => 5_000,
        }
    }

    /// `rbps rseqiops rrandiops wbps wseqiops wrandiops` of the class (`autop[].i_lcoefs`).
    pub fn i_lcoefs(self) -> [u64; 6] {
        match self {
            AutopClass::Hdd => [174_019_176, 41_708, 370, 178_075_866, 42_705, 378],
            AutopClass::SsdQd1 => [245_855_193, 61_575, 6_946, 141_365_009, 33_716, 26_796],
            AutopClass::SsdDfl => [488_636_629, 8_932, 8_518, 427_891_549, 28_755, 21_940],
            AutopClass::SsdFast => {
                [3_102_524_156, 724_816, 778_122, 1_742_780_862, 425_702, 443_193]
            }
        }
    }

    /// `too_fast_vrate_pct` and `too_slow_vrate_pct`: the vrate (percent) that, held for
    /// `AUTOP_CYCLE_NSEC`, moves an SSD to the faster or slower class.
    pub fn vrate_pct_bounds(self) -> (Option<u64>, Option<u64>) {
        match self {
            AutopClass::SsdDfl => (Some(500), None),
            AutopClass::SsdFast => (None, Some(10)),
            _ => (None, None),
        }
    }
}

/// `cgroup_parse_float(buf, 2, &v)`: a decimal with at most two fractional digits, in
/// hundredths.
fn parse_hundredths(s: &str) -> Option<u64> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() && frac.is_empty() || frac.len() > 2 {
        return None;
    }
    let all_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(int) || !all_digits(frac) || int.len() > 12 {
        return None;
    }
    let i: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let f: u64 = if frac.is_empty() { 0 } else { format!("{frac:0<2}").parse().ok()? };
    Some(i * 100 + f)
}

/// One `io.weight` line: `default N` or `N` (the cgroup's default), or `MAJ:MIN N|default`
/// (one device's, `default` removing it). Returns the device part, if any, and the weight
/// (`None`: back to the default).
pub fn parse_io_weight_line(line: &str) -> Result<(Option<&str>, Option<u32>), String> {
    parse_weight_line("io.weight", line, CGROUP_WEIGHT_MIN, CGROUP_WEIGHT_MAX)
}

/// A line of a cgroup weight file in `io.weight`'s grammar (`io.weight`, BFQ's
/// `io.bfq.weight`), its weights `min..=max`; errors name `file`.
pub fn parse_weight_line<'a>(
    file: &str,
    line: &'a str,
    min: u32,
    max: u32,
) -> Result<(Option<&'a str>, Option<u32>), String> {
    let line = line.trim();
    let (dev, rest) = match line.split_once(char::is_whitespace) {
        Some((first, rest)) if first != "default" => (Some(first), rest.trim()),
        _ => (None, line.strip_prefix("default").unwrap_or(line).trim()),
    };
    if dev.is_some() && rest == "default" {
        return Ok((dev, None));
    }
    let w: u32 =
        rest.parse().map_err(|_| format!("{file}: `{line}`: expected a weight {min}-{max}"))?;
    if !(min..=max).contains(&w) {
        return Err(format!("{file}: `{line}`: the weight must be {min} to {max}"));
    }
    Ok((dev, Some(w)))
}
