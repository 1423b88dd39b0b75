use super::*;
use elevator_core::Owner;
use std::collections::VecDeque;

const US: Nanos = 1_000;
const MS: Nanos = 1_000_000;

fn rq(id: u64, op: Op, sector: u64, now: Nanos) -> Request {
    let len = if op == Op::Flush { 0 } else { 4096 };
    Request::new(RequestId(id), op, sector * 512, len, true, Owner::process(1), now).unwrap()
}

fn next(k: &mut Kyber, now: Nanos) -> Option<Request> {
    match k.dispatch(now) {
        Dispatch::Request(r) => Some(r),
        _ => None,
    }
}

#[test]
fn batches_of_sixteen_reads_then_eight_writes() {
    let mut k = Kyber::new();
    for i in 0..20 {
        k.insert(rq(i, Op::Read, i * 1000, 0), 0);
    }
    for i in 20..30 {
        k.insert(rq(i, Op::Write, i * 1000, 0), 0);
    }
    let ops: Vec<Op> = (0..30).map(|_| next(&mut k, 0).unwrap().op).collect();
    let runs: Vec<(Op, usize)> = ops.chunk_by(|a, b| a == b).map(|c| (c[0], c.len())).collect();
    assert_eq!(runs, vec![(Op::Read, 16), (Op::Write, 8), (Op::Read, 4), (Op::Write, 2)]);
    assert_eq!(k.queued(), 0);
}

#[test]
fn a_domain_out_of_tokens_waits_for_a_completion() {
    let mut k = Kyber::new();
    for i in 0..20 {
        k.insert(rq(i, Op::Flush, 0, 0), 0);
    }
    let out: Vec<Request> = std::iter::from_fn(|| next(&mut k, 0)).collect();
    assert_eq!(out.len(), 16, "the other domain has 16 tokens");
    k.completed(&out[0], MS);
    assert!(next(&mut k, MS).is_some());
    assert!(next(&mut k, MS).is_none());
}

#[test]
fn samples_fall_in_quarter_target_buckets() {
    let mut k = Kyber::new();
    // Reads: target 2 ms, buckets of 500 µs; the last bucket is open.
    for (lat, bucket) in
        [(1, 0), (500 * US, 0), (501 * US, 1), (2 * MS, 3), (2 * MS + 1, 4), (50 * MS, 7)]
    {
        k.add_sample(READ, IO, lat);
        assert_eq!(k.histograms[READ][IO].buckets[bucket], 1, "{lat} ns");
        k.histograms[READ][IO] = Histogram::default();
    }
    // A percentile waits for 500 samples or a second.
    for _ in 0..499 {
        k.add_sample(READ, TOTAL, 100 * US);
    }
    assert_eq!(k.percentile(READ, TOTAL, 99, 0), None);
    assert_eq!(k.percentile(READ, TOTAL, 99, SAMPLE_TIMEOUT_NS), Some(0));
    assert_eq!(k.histograms[READ][TOTAL].buckets.iter().sum::<u64>(), 0, "taken, then cleared");
    for i in 0..1000 {
        k.add_sample(WRITE, TOTAL, if i < 985 { MS } else { 30 * MS });
    }
    assert_eq!(k.percentile(WRITE, TOTAL, 99, 0), Some(7));
}

/// Reads (4 outstanding) and writes (`writers` outstanding) on a device that serves one
/// request at a time in `service_ns`, FIFO, for `duration_ns`. Returns the reads' p90 latency
/// over the last half and kyber's final depths.
fn contend(
    k: &mut Kyber,
    writers: u64,
    service_ns: Nanos,
    duration_ns: Nanos,
) -> (Nanos, [u32; DOMAINS]) {
    let mut id = 0;
    let mut device: VecDeque<Request> = VecDeque::new();
    let mut busy_until: Option<Nanos> = None;
    let mut read_lat = Vec::new();
    for _ in 0..4 {
        k.insert(rq(id, Op::Read, id * 8, 0), 0);
        id += 1;
    }
    for _ in 0..writers {
        k.insert(rq(id, Op::Write, id * 8, 0), 0);
        id += 1;
    }
    let mut now = 0;
    while now < duration_ns {
        while let Some(r) = next(k, now) {
            device.push_back(r);
        }
        if busy_until.is_none() && !device.is_empty() {
            busy_until = Some(now + service_ns);
        }
        now = busy_until.expect("something is always in the device");
        let done = device.pop_front().unwrap();
        busy_until = (!device.is_empty()).then_some(now + service_ns);
        k.completed(&done, now);
        if done.op == Op::Read && now > duration_ns / 2 {
            read_lat.push(now - done.submit_ns);
        }
        k.insert(rq(id, done.op, id * 8, now), now);
        id += 1;
    }
    read_lat.sort_unstable();
    (read_lat[read_lat.len() * 9 / 10], k.depths())
}

#[test]
fn writes_are_throttled_while_reads_miss_their_target() {
    // 20 µs a request, 128 writes outstanding: a read waits ~2.6 ms behind them.
    let mut k = Kyber::new();
    let (p90, depths) = contend(&mut k, 128, 20 * US, 10_000 * MS);
    assert!(k.resizes > 0);
    assert!(depths[WRITE] < 128, "write depth {}", depths[WRITE]);
    assert!(p90 <= 2 * MS, "read p90 {p90} ns against the 2 ms target");
    // Without the write flood, nothing needs throttling.
    let mut calm = Kyber::new();
    let (p90, depths) = contend(&mut calm, 4, 20 * US, 2_000 * MS);
    assert_eq!(depths, KYBER_DEPTH);
    assert!(p90 < 500 * US, "{p90}");
}

#[test]
fn tunables_by_their_sysfs_names() {
    let mut k = Kyber::new();
    assert_eq!(k.tunable("read_lat_nsec").unwrap(), "2000000");
    assert_eq!(k.tunable("write_lat_nsec").unwrap(), "10000000");
    k.set_tunable("read_lat_nsec", "500000").unwrap();
    assert_eq!(k.targets_ns[READ], 500_000);
    assert!(k.set_tunable("read_lat_nsec", "0").is_err());
    let e = k.set_tunable("slice_idle", "0").unwrap_err().to_string();
    assert!(e.contains("read_lat_nsec, write_lat_nsec"), "{e}");
}
