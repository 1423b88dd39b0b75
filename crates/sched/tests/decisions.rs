//! Every scheduler says why each request it dispatches went then (`last_decision`): two
//! sequential readers and a random writer on a device that serves one request at a time in
//! 1 ms, for two simulated seconds; the phrases each policy should use show up.

use std::collections::BTreeSet;

use elevator_core::{Nanos, Op, Owner, Request, RequestId};
use elevator_sched::{by_name, Dispatch};

const MS: Nanos = 1_000_000;

fn decisions(name: &str) -> BTreeSet<&'static str> {
    let mut s = by_name(name).unwrap();
    if name == "bfq" {
        // Raised, a new queue's budget times out only after 30 x timeout_sync (3.75 s), past
        // this run: without raising the queues take turns within it.
        s.set_tunable("low_latency", "0").unwrap();
    }
    let mut seen = BTreeSet::new();
    let mut id = 0u64;
    let mut pos = [0u64, 1 << 24, 0];
    let mut rq = |proc_: usize, now: Nanos, pos: &mut [u64; 3]| {
        id += 1;
        let (op, sync, sector) = if proc_ == 2 {
            (Op::Write, false, (id * 7_919 % 1_000_000) * 8)
        } else {
            pos[proc_] += 8;
            (Op::Read, true, pos[proc_])
        };
        let owner = Owner::process(proc_ as u32 + 1);
        Request::new(RequestId(id), op, sector * 512, 4096, sync, owner, now).unwrap()
    };
    let mut now = 0;
    for p in 0..3 {
        for _ in 0..4 {
            let r = rq(p, now, &mut pos);
            s.insert(r, now);
        }
    }
    while now < 2_000 * MS {
        match s.dispatch(now) {
            Dispatch::Request(r) => {
                let d = s.last_decision();
                assert!(!d.is_empty(), "{name}: a request without a decision");
                seen.insert(d);
                now += MS;
                s.completed(&r, now);
                let p = r.owner.pid as usize - 1;
                let next = rq(p, now, &mut pos);
                s.insert(next, now);
            }
            Dispatch::WaitUntil { until_ns } => now = until_ns.max(now + 1),
            Dispatch::Empty => now += MS,
        }
    }
    eprintln!("{name}: {seen:?}");
    seen
}

#[test]
fn each_policy_names_its_reasons() {
    let d = decisions("mq-deadline");
    assert!(d.contains("batch continues") && d.contains("new read batch"), "{d:?}");
    assert!(d.iter().any(|x| x.contains("write")), "{d:?}");
    let c = decisions("cfq");
    assert!(c.contains("slice continues"), "{c:?}");
    assert!(c.iter().any(|x| x.ends_with("new slice")), "{c:?}");
    let b = decisions("bfq");
    assert!(b.contains("budget continues"), "{b:?}");
    assert!(b.iter().any(|x| x.contains(": next by B-WF2Q+")), "{b:?}");
    let a = decisions("anticipatory");
    assert!(
        a.contains("batch continues") || a.contains("anticipation ended: batch continues"),
        "{a:?}"
    );
    let k = decisions("kyber");
    assert!(k.contains("domain batch continues"), "{k:?}");
    assert_eq!(decisions("none").into_iter().collect::<Vec<_>>(), ["fifo order"]);
}
