//! A node in a second OS process (this test binary again, told by
//! `STEPSCHED_NATS_CHILD`), killed: the watcher gets `NoConnection`, and
//! what the child sent before its end arrived with no gap.

use super::{next, node, reports, server, start};
use crate::actor::{Actor, Msg, Seen};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;
use stepsched::process::{ExitReason, Pid};

const CHILD: &str = "STEPSCHED_NATS_CHILD";

/// The child's side: a node 2 whose actor streams numbers to the PID in
/// `STEPSCHED_NATS_TARGET`; it prints its actor's PID and runs until
/// killed. Does nothing when run as an ordinary test.
#[test]
fn child_node() {
    let Ok(url) = std::env::var(CHILD) else {
        return;
    };
    let target = Pid::from_raw(
        std::env::var("STEPSCHED_NATS_TARGET")
            .unwrap()
            .parse()
            .unwrap(),
    );
    let (scheduler, transport) = start(&url, 2);
    assert!(transport.wait_for(node(1), Duration::from_secs(30)));
    let streamer = scheduler.submit(Actor::new(None), "streamer", ()).unwrap();
    println!("PID {}", streamer.into_raw());
    scheduler.send(streamer, Msg::Stream(target)).unwrap();
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Node 1 here, node 2 a child OS process that streams numbers to a
/// collector here, which monitors the streamer. Killed (SIGKILL) once some
/// arrived: the collector gets one `Down` with `NoConnection`, after every
/// number it got, and those are `0..k` with no gap.
#[test]
fn a_killed_node_is_told_noconnection_and_nothing_before_it_is_lost() {
    let server = server();
    let (a, ta) = start(&server.url(), 1);
    let (tx, rx) = reports();
    let collector = a.submit(Actor::new(Some(tx)), "collector", ()).unwrap();
    let mut child = Killed(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "killed::child_node",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, server.url())
            .env("STEPSCHED_NATS_TARGET", collector.into_raw().to_string())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the child starts"),
    );
    // Read on a thread, so that a child that never prints fails the test
    // (the 60 s guard) instead of hanging it.
    let stdout = child.0.stdout.take().unwrap();
    let (pid_tx, pid_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // After the harness's "test killed::child_node ... ", which
            // has no newline of its own.
            if let Some((_, raw)) = line.split_once("PID ") {
                let _ = pid_tx.send(Pid::from_raw(raw.trim().parse().unwrap()));
            }
        }
    });
    let streamer = (pid_rx.recv_timeout(Duration::from_secs(60)))
        .expect("the child prints its actor's PID within the minute");
    assert_eq!(streamer.node(), node(2));
    assert!(ta.wait_for(node(2), Duration::from_secs(30)));
    a.send(collector, Msg::Monitor(streamer)).unwrap();
    let mut got = Vec::new();
    while got.len() < 200 {
        match next(&rx) {
            (at, Seen::Num(n)) if at == collector => got.push(n),
            other => panic!("only numbers before the kill: {other:?}"),
        }
    }
    child.kill();
    let down = loop {
        match next(&rx) {
            (_, Seen::Num(n)) => got.push(n),
            (at, Seen::Down(pid, reason)) => break (at, pid, reason),
        }
    };
    assert_eq!(down, (collector, streamer, ExitReason::NoConnection));
    let expected: Vec<u64> = (0..got.len() as u64).collect();
    assert_eq!(got, expected, "every number sent before the end, in order");
    assert!(
        rx.recv_timeout(Duration::from_millis(500)).is_err(),
        "one Down, nothing after"
    );
}

/// The child process, killed (and reaped) when the test ends, however.
struct Killed(std::process::Child);

impl Killed {
    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        self.kill();
    }
}
