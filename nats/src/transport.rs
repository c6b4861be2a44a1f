//! [`NatsTransport`]: frames over NATS subjects, one subject per node,
//! and heartbeats for liveness.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::{Client, Subscriber};
use futures_util::StreamExt;
use stepsched::process::NodeId;
use stepsched::sched::remote::{Frame, Inbound, Transport};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::liveness::Liveness;
use crate::wire;

/// How a [`NatsTransport`] names its subjects and decides a node is gone.
#[derive(Debug, Clone)]
pub struct Options {
    /// The first token of every subject (default `stepsched`): nodes with
    /// the same prefix on one server form a cluster.
    pub prefix: String,
    /// How often a node says it is alive (default 100 ms).
    pub heartbeat: Duration,
    /// How many intervals a node may be silent before it is gone
    /// (default 5: gone after 500 ms of silence).
    pub missed: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            prefix: "stepsched".into(),
            heartbeat: Duration::from_millis(100),
            missed: 5,
        }
    }
}

/// What a transport counted: frames and the NATS messages that carried
/// them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransportStats {
    /// Frames handed to NATS.
    pub frames_out: u64,
    /// NATS messages published for them (frames to one node, batched).
    pub batches_out: u64,
    /// Frames received for this node.
    pub frames_in: u64,
    /// Publishes NATS refused (the connection closed, or a batch over the
    /// server's payload limit): their frames did not leave.
    pub publish_errors: u64,
    /// Frames received that were not taken in (undecodable, for another
    /// node, or after the scheduler was dropped).
    pub refused_in: u64,
    /// Times the client dropped messages of a subscription that fell
    /// behind (async-nats's slow-consumer event): core NATS delivers at
    /// most once, and frames so dropped are lost. Nonzero means a node's
    /// inbound could not keep up.
    pub slow_consumer: u64,
}

/// The state the transport's tasks share.
struct State {
    node: NodeId,
    options: Options,
    client: Client,
    incarnation: u64,
    live: Liveness,
    frames_out: AtomicU64,
    batches_out: AtomicU64,
    frames_in: AtomicU64,
    publish_errors: AtomicU64,
    refused_in: AtomicU64,
    slow_consumer: Arc<AtomicU64>,
}

impl State {
    fn node_subject(&self, node: NodeId) -> String {
        format!("{}.node.{}", self.options.prefix, node.get())
    }
}

/// The subscriptions, the outbound queue and the connection's breaks,
/// from `connect` until `attach` starts their tasks.
struct Pending {
    frames: Subscriber,
    beats: Subscriber,
    queued: UnboundedReceiver<Frame>,
    breaks: UnboundedReceiver<()>,
}

struct Inner {
    state: Arc<State>,
    out: UnboundedSender<Frame>,
    /// What `attach` starts reading, made at connect.
    pending: Mutex<Option<Pending>>,
    /// The tasks `attach` started, for [`NatsTransport::sever`].
    tasks: Mutex<Vec<tokio::task::AbortHandle>>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Not `Runtime::drop`, which blocks: the last handle may be dropped
        // on the runtime's own thread (a delivery that held the scheduler).
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A [`Transport`] over NATS: each node subscribes to
/// `{prefix}.node.{id}`, and a node's outbound frames are batched per
/// destination into NATS messages on that subject (one task, one
/// connection: per-destination order is the order of `send`). Each node
/// publishes a heartbeat on `{prefix}.hb.{id}` every
/// [`Options::heartbeat`]; one silent for [`Options::missed`] intervals is
/// gone, and the scheduler is told ([`Inbound::node_down`]): every monitor
/// and link of its processes gets `NoConnection`. Frames to a node not
/// heard from (not yet, or no longer) are refused at once
/// ([`Transport::send`]'s `Err`), so a send to it is reported, not lost.
///
/// Clones share one connection: keep one to ask [`wait_for`](Self::wait_for)
/// and [`stats`](Self::stats), and give another to the builder.
///
/// It runs its own small tokio runtime (one thread, `stepsched-nats`).
/// What it does not do: carry frames larger than the server's payload
/// limit (1 MB by default; such a publish is counted in
/// [`TransportStats::publish_errors`]), know what was in flight to a
/// node that died (lost with it), or keep frames a node too slow to read
/// them was sent (core NATS drops them for a slow consumer: counted in
/// [`TransportStats::slow_consumer`]), nor frames sent on a connection to
/// the server as it broke (delivered if it returns soon, else possibly
/// lost: NATS core is at most once). When that connection breaks, every
/// other node falls at once (a send to it is refused from then on); when
/// it returns (a partition that heals), the nodes that fell were told gone
/// once and are heard again, their processes as they were: monitors and
/// links that fired stay fired, and new sends and monitors work. A node
/// restarted with the same
/// [`NodeId`] is a new incarnation: its old processes are told gone, but
/// a PID of the old one may name a process of the new.
#[derive(Clone)]
pub struct NatsTransport {
    inner: Arc<Inner>,
}

impl NatsTransport {
    /// Connects node `node` to the NATS server at `url`.
    ///
    /// # Errors
    ///
    /// If the runtime cannot start, or the server cannot be reached or
    /// refuses the subscriptions.
    pub fn connect(url: &str, node: NodeId, options: Options) -> io::Result<NatsTransport> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("stepsched-nats")
            .enable_all()
            .build()?;
        let slow_consumer = Arc::new(AtomicU64::new(0));
        let slow = Arc::clone(&slow_consumer);
        let (broke, breaks) = unbounded_channel();
        let (client, frames, beats) = runtime.block_on(async {
            let client = async_nats::ConnectOptions::new()
                .event_callback(move |event| {
                    let slow = Arc::clone(&slow);
                    let broke = broke.clone();
                    async move {
                        match event {
                            async_nats::Event::SlowConsumer(_) => {
                                // Relaxed: a statistic.
                                slow.fetch_add(1, Ordering::Relaxed);
                            }
                            async_nats::Event::Disconnected => {
                                let _ = broke.send(());
                            }
                            _ => {}
                        }
                    }
                })
                .connect(url)
                .await
                .map_err(io::Error::other)?;
            let own = format!("{}.node.{}", options.prefix, node.get());
            let frames = client.subscribe(own).await.map_err(io::Error::other)?;
            let beats = (client.subscribe(format!("{}.hb.*", options.prefix)))
                .await
                .map_err(io::Error::other)?;
            client.flush().await.map_err(io::Error::other)?;
            Ok::<_, io::Error>((client, frames, beats))
        })?;
        let incarnation = incarnation();
        let state = Arc::new(State {
            node,
            options,
            client,
            incarnation,
            live: Liveness::new(),
            frames_out: AtomicU64::new(0),
            batches_out: AtomicU64::new(0),
            frames_in: AtomicU64::new(0),
            publish_errors: AtomicU64::new(0),
            refused_in: AtomicU64::new(0),
            slow_consumer,
        });
        let (out, queued) = unbounded_channel();
        Ok(NatsTransport {
            inner: Arc::new(Inner {
                state,
                out,
                pending: Mutex::new(Some(Pending {
                    frames,
                    beats,
                    queued,
                    breaks,
                })),
                tasks: Mutex::new(Vec::new()),
                runtime: Some(runtime),
            }),
        })
    }

    /// This node.
    pub fn node(&self) -> NodeId {
        self.inner.state.node
    }

    /// Waits until `node` has been heard from, up to `timeout`; whether it
    /// was. (A node is reachable only once heard: call this before the
    /// first send to it.)
    pub fn wait_for(&self, node: NodeId, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.inner.state.live.is_up(node) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The nodes heard from and not gone.
    pub fn nodes_up(&self) -> Vec<NodeId> {
        self.inner.state.live.up()
    }

    /// What it counted so far.
    pub fn stats(&self) -> TransportStats {
        let s = &self.inner.state;
        // Relaxed: statistics.
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        TransportStats {
            frames_out: get(&s.frames_out),
            batches_out: get(&s.batches_out),
            frames_in: get(&s.frames_in),
            publish_errors: get(&s.publish_errors),
            refused_in: get(&s.refused_in),
            slow_consumer: get(&s.slow_consumer),
        }
    }

    /// The NATS client (its connection is this transport's), e.g. to
    /// measure the server's own round trip beside the transport's.
    pub fn client(&self) -> Client {
        self.inner.state.client.clone()
    }

    /// Cuts this node off, as if its process died: no heartbeat, no frame
    /// out (queued ones are dropped) and none in from now on. The other
    /// nodes declare it gone after [`Options::missed`] intervals; this
    /// node's own scheduler is not told (it may still run, alone). For
    /// tests of a node's death within one process.
    pub fn sever(&self) {
        let tasks =
            std::mem::take(&mut *self.inner.tasks.lock().unwrap_or_else(|e| e.into_inner()));
        for task in tasks {
            task.abort();
        }
    }

    fn spawn<F: std::future::Future<Output = ()> + Send + 'static>(&self, task: F) {
        if let Some(runtime) = &self.inner.runtime {
            let handle = runtime.spawn(task).abort_handle();
            self.inner
                .tasks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(handle);
        }
    }
}

impl Transport for NatsTransport {
    fn attach(&self, inbound: Inbound) {
        let taken = self
            .inner
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let Some(pending) = taken else {
            return; // attached before: one scheduler per transport
        };
        let state = &self.inner.state;
        self.spawn(outbound(Arc::clone(state), pending.queued));
        self.spawn(inbound_frames(
            Arc::clone(state),
            pending.frames,
            inbound.clone(),
        ));
        self.spawn(heartbeats(
            Arc::clone(state),
            pending.beats,
            pending.breaks,
            inbound,
        ));
    }

    fn send(&self, frame: Frame) -> Result<(), Frame> {
        if !self.inner.state.live.is_up(frame.to.node()) {
            return Err(frame);
        }
        self.inner.out.send(frame).map_err(|e| e.0)
    }
}

/// The most frames one NATS message carries, and its bytes (well under the
/// server's 1 MB default payload limit).
const BATCH_FRAMES: usize = 4096;
const BATCH_BYTES: usize = 256 * 1024;

/// Takes every queued frame, groups them per destination node (in order),
/// and publishes each group as one message on that node's subject.
async fn outbound(state: Arc<State>, mut queued: UnboundedReceiver<Frame>) {
    let mut groups: Vec<(NodeId, Vec<u8>, u64)> = Vec::new();
    while let Some(first) = queued.recv().await {
        let mut next = Some(first);
        let mut taken = 0;
        while let Some(frame) = next.take() {
            let node = frame.to.node();
            let at = match groups.iter().position(|(n, _, _)| *n == node) {
                Some(at) => at,
                None => {
                    groups.push((node, Vec::new(), 0));
                    groups.len() - 1
                }
            };
            wire::encode(&frame, &mut groups[at].1);
            groups[at].2 += 1;
            taken += 1;
            if groups[at].1.len() >= BATCH_BYTES {
                let (node, bytes, count) = groups.swap_remove(at);
                publish(&state, node, bytes, count).await;
            }
            if taken < BATCH_FRAMES {
                next = queued.try_recv().ok();
            }
        }
        for (node, bytes, count) in groups.drain(..) {
            publish(&state, node, bytes, count).await;
        }
    }
}

async fn publish(state: &State, node: NodeId, bytes: Vec<u8>, frames: u64) {
    let subject = state.node_subject(node);
    // Relaxed: statistics.
    match state.client.publish(subject, bytes.into()).await {
        Ok(()) => {
            state.frames_out.fetch_add(frames, Ordering::Relaxed);
            state.batches_out.fetch_add(1, Ordering::Relaxed);
        }
        Err(_) => {
            state.publish_errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Frames for this node, handed in one by one, in the order they came.
async fn inbound_frames(state: Arc<State>, mut frames: Subscriber, inbound: Inbound) {
    while let Some(message) = frames.next().await {
        let Ok(batch) = wire::decode(&message.payload) else {
            // Relaxed: statistics.
            state.refused_in.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        if let Some(first) = batch.first() {
            let from = first.from.node();
            if from != state.node && state.live.heard(from, 0) {
                inbound.node_down(from);
            }
        }
        // Relaxed: statistics.
        state
            .frames_in
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        for frame in batch {
            if inbound.deliver(frame).is_err() {
                state.refused_in.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Publishes this node's heartbeat, hears the others', and tells the
/// scheduler of each node that falls silent, and of every node at once
/// when the connection to the server breaks (none can be reached: a send
/// to them is refused from then on, not queued to a connection that may
/// lose it).
async fn heartbeats(
    state: Arc<State>,
    mut beats: Subscriber,
    mut breaks: UnboundedReceiver<()>,
    inbound: Inbound,
) {
    let interval = state.options.heartbeat;
    let limit = interval * state.options.missed;
    let own = format!("{}.hb.{}", state.options.prefix, state.node.get());
    let beat = state.incarnation.to_le_bytes().to_vec();
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                // A failed publish (the connection is down) is a silence
                // the others will notice.
                let _ = state.client.publish(own.clone(), beat.clone().into()).await;
                for node in state.live.fallen(limit) {
                    inbound.node_down(node);
                }
            }
            Some(()) = breaks.recv() => {
                for node in state.live.fall_all() {
                    inbound.node_down(node);
                }
            }
            message = beats.next() => {
                let Some(message) = message else { return };
                let Some(node) = heartbeat_node(&message.subject) else { continue };
                if node == state.node {
                    continue;
                }
                let incarnation = (message.payload.as_ref().try_into().ok())
                    .map_or(0, u64::from_le_bytes);
                if state.live.heard(node, incarnation) {
                    inbound.node_down(node);
                }
            }
        }
    }
}

/// The node of a heartbeat subject, `{prefix}.hb.{id}`.
fn heartbeat_node(subject: &str) -> Option<NodeId> {
    let id = subject.rsplit('.').next()?;
    NodeId::new(id.parse().ok()?)
}

/// A number that tells this connection from an earlier one of the same
/// node: the clock's nanoseconds and the process id, never 0.
fn incarnation() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    (nanos ^ (u64::from(std::process::id()) << 40)) | 1
}
