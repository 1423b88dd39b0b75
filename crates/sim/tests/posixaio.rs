//! posixaio: glibc's AIO runs one request per file descriptor at a time
//! (`__aio_enqueue_request` queues a request behind the one running on its descriptor), so
//! a job keeps `iodepth` io_us in use while its device sees one request at a time; fio's
//! submission only queues the request (no `slat`), and it reaps as libaio's.

mod common;

use common::engine_run as run;

#[test]
fn direct_posixaio_sends_its_device_one_request_at_a_time() {
    let one = run("rw=randread\ndirect=1\nioengine=posixaio\niodepth=1");
    let deep = run("rw=randread\ndirect=1\nioengine=posixaio\niodepth=32");
    let libaio = run("rw=randread\ndirect=1\nioengine=libaio\niodepth=32");
    // The drive seeks for each, whatever the depth; libaio's 32 let its queue order them.
    assert!(one.0.abs_diff(deep.0) <= 32, "{one:?} {deep:?}");
    assert!(libaio.0 > 2 * deep.0, "{libaio:?} {deep:?}");
    // fio keeps its 32 io_us busy (depth 32: index 5 of 1, 2, 4, 8, 16, 32, >= 64); each
    // waits behind the 31 before it, and is only queued at submission.
    assert_eq!(deep.3, 5, "{deep:?}");
    assert_eq!(deep.1, 0.0, "{deep:?}");
    let ratio = deep.2 / one.2;
    assert!((20.0..40.0).contains(&ratio), "clat {ratio}x depth 1's: {deep:?} {one:?}");
}

#[test]
fn buffered_posixaio_makes_one_call_at_a_time_with_iodepth_io_us() {
    let psync = run("rw=randwrite\nsize=16m\nioengine=psync");
    let posixaio = run("rw=randwrite\nsize=16m\nioengine=posixaio\niodepth=4");
    assert!(psync.0.abs_diff(posixaio.0) <= 4, "{psync:?} {posixaio:?}");
    assert_eq!(posixaio.3, 2, "depth 4: {posixaio:?}");
    // No slat: the call runs in glibc's thread; clat is it and the three before it reaped.
    assert_eq!(posixaio.1, 0.0, "{posixaio:?}");
    assert!(posixaio.2 > 3.0 * psync.2, "{posixaio:?} {psync:?}");
}
