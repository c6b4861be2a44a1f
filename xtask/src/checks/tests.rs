//! The file-to-check map and the Miri check names.

use super::*;

#[test]
fn a_miri_check_names_its_binary_and_filter() {
    assert_eq!(
        miri_target("deque_weak_memory"),
        ["--test", "deque_weak_memory"]
    );
    assert_eq!(miri_target("lib=mpsc::tests"), ["--lib", "mpsc::tests"]);
    assert_eq!(
        miri_target("sched_shutdown=shutdown_c"),
        ["--test", "sched_shutdown", "shutdown_c"]
    );
    assert_eq!(
        checks_for("src/sched/core/table.rs", true)
            .last()
            .map(String::as_str),
        Some("miri:lib=table::tests::whoever")
    );
}

#[test]
fn files_map_to_their_checks() {
    assert_eq!(checks_for("src/deque/worker.rs", false), ["loom:deque"]);
    assert_eq!(
        checks_for("src/deque/worker.rs", true),
        ["loom:deque", "miri:deque_weak_memory"]
    );
    assert_eq!(
        checks_for("src/mpsc/block.rs", true),
        [
            "loom:mpsc",
            "loom:mailbox",
            "loom:global_queue",
            "loom:drain",
            "miri:lib=mpsc::tests"
        ]
    );
    assert_eq!(checks_for("src/mpsc/pool.rs", false), ["loom:pool"]);
    assert_eq!(
        checks_for("src/process/state/transitions.rs", false),
        [
            "loom:state",
            "loom:handoff",
            "loom:dump",
            "loom:bound",
            "loom:drain",
            "loom:links",
            "loom:registry"
        ]
    );
    assert_eq!(
        checks_for("src/sched/observe/figures.rs", false),
        ["loom:dump", "loom:drain", "test:sched_dump"]
    );
    assert_eq!(
        checks_for("src/sched/observe/monitor.rs", false),
        ["test:sched_monitor"]
    );
    assert_eq!(
        checks_for("src/sched/observe/watch.rs", false),
        ["loom:watch", "test:sched_monitor"]
    );
    assert_eq!(
        checks_for("src/sched/worker/step.rs", false)[0],
        "test:sched_messages"
    );
    assert!(checks_for("src/padded.rs", false).is_empty());
}
