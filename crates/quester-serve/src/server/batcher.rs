//! The generation thread: owns the backend and keeps one continuous batch going. When idle it
//! blocks for a request; while generating, after every step it takes the requests that arrived
//! (they join the running batch at the next step), answers the sequences that ended, and
//! drops those whose client went away.

use std::collections::{HashMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};

use super::backend::{
    BackendError, BackendOrders, BackendStep, ChatBackend, GenerationOutput, GenerationRequest,
    Progress,
};
use super::queue::{Permit, Queue};
use tokio::sync::mpsc::UnboundedSender;

/// What the generation thread tells a request's handler.
#[derive(Debug)]
pub(crate) enum Event {
    /// Tokens choice `index` added (sent for streamed requests only).
    Tokens { index: usize, progress: Progress },
    /// Choice `index` ended.
    Done {
        index: usize,
        result: Result<GenerationOutput, BackendError>,
    },
}

/// What handlers send the generation thread.
pub(crate) enum Work {
    /// A request's sequences.
    Generate(Job),
    /// An adapter change, made once the sequences before it have finished; the requests after
    /// it wait for it.
    Adapter(AdapterChange),
}

/// Load (`dir` set) or unload (`dir` None) the LoRA adapter `name`.
pub(crate) struct AdapterChange {
    pub name: String,
    pub dir: Option<PathBuf>,
    pub reply: tokio::sync::oneshot::Sender<Result<(), BackendError>>,
}

/// The sequences of one HTTP request (its choices) and where their events go.
pub(crate) struct Job {
    /// The model the request named (None: whatever is loaded).
    pub model: Option<String>,
    pub sequences: Vec<GenerationRequest>,
    /// Whether the client wants tokens as they come.
    pub stream: bool,
    pub events: UnboundedSender<Event>,
    /// Set by the HTTP side when its client has gone: the job's sequences are dropped.
    pub gone: Arc<AtomicBool>,
    /// The job's room in the queue, given back when the job leaves this thread.
    pub _permit: Permit,
}

/// Keys of a job's sequences: the job's number, then the choice's index below it.
const CHOICE_BITS: u32 = 16;

fn key(job: u64, index: usize) -> u64 {
    (job << CHOICE_BITS) | index as u64
}

fn split(key: u64) -> (u64, usize) {
    (
        key >> CHOICE_BITS,
        (key & ((1 << CHOICE_BITS) - 1)) as usize,
    )
}

/// A job on this thread.
struct Live {
    job: Job,
    /// Choices not yet answered.
    open: Vec<bool>,
    /// Whether its sequences were submitted to the backend.
    submitted: bool,
}

impl Live {
    fn gone(&self) -> bool {
        self.job.gone.load(Ordering::SeqCst)
    }
}

/// A waiting job, or an adapter change the jobs behind it wait for.
enum Waiting {
    Job(u64),
    Adapter(AdapterChange),
}

/// The jobs waiting and running, and the limit on sequences decoding at once.
struct State {
    /// The adapter loaded now (shared with the handlers, for `GET /v1/models`).
    adapter: Arc<Mutex<Option<String>>>,
    queue: Arc<Queue>,
    max_running: usize,
    next_job: u64,
    jobs: HashMap<u64, Live>,
    /// Jobs not yet submitted and adapter changes, oldest first.
    waiting: VecDeque<Waiting>,
    /// Sequences submitted and not ended.
    running: usize,
    /// Every job sender is gone (the server is stopping).
    closed: bool,
}

/// Runs until every job sender is dropped and nothing is left. At most `max_running`
/// sequences decode at once, unless one request alone has more (it then runs alone); a
/// request's choices are submitted together, so they share their prompt's prefill.
pub(crate) fn run_generation(
    mut backend: Box<dyn ChatBackend>,
    jobs: Receiver<Work>,
    max_running: usize,
    queue: Arc<Queue>,
    adapter: Arc<Mutex<Option<String>>>,
) {
    let mut state = State {
        adapter,
        queue,
        max_running: max_running.max(1),
        next_job: 0,
        jobs: HashMap::new(),
        waiting: VecDeque::new(),
        running: 0,
        closed: false,
    };
    loop {
        if state.jobs.is_empty() && state.waiting.is_empty() {
            if state.closed {
                return;
            }
            match jobs.recv() {
                Ok(work) => state.take(work),
                Err(_) => return,
            }
        }
        state.take_new(&jobs);
        // Nothing runs here: an adapter change at the head of the line is made now.
        if let Some(Waiting::Adapter(_)) = state.waiting.front() {
            if let Some(Waiting::Adapter(change)) = state.waiting.pop_front() {
                state.change_adapter(backend.as_mut(), change);
            }
            continue;
        }
        let first = state.admit();
        if first.is_empty() {
            // Only jobs whose clients left (dropped by `admit`), or the server is closing.
            continue;
        }
        // A panicking backend must not take the server down: what was running fails with
        // its message, and the thread goes on with the next requests.
        let result = catch_unwind(AssertUnwindSafe(|| {
            backend.generate_continuous(first, &mut |step| state.on_step(step, &jobs))
        }))
        .unwrap_or_else(|panic| {
            let why = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_string()))
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(BackendError::internal(format!(
                "generation panicked: {why}"
            )))
        });
        let err = result.err().unwrap_or_else(|| {
            BackendError::internal("the backend stopped without answering every sequence")
        });
        state.fail_submitted(&err);
        // Nothing runs once the backend has returned, whatever it reported.
        state.running = 0;
    }
}

impl State {
    fn take(&mut self, work: Work) {
        match work {
            Work::Generate(job) => self.add(job),
            Work::Adapter(change) => self.waiting.push_back(Waiting::Adapter(change)),
        }
    }

    /// Makes an adapter change and answers it. Unloading names the adapter loaded now.
    fn change_adapter(&mut self, backend: &mut dyn ChatBackend, change: AdapterChange) {
        let mut current = self.adapter.lock().unwrap_or_else(PoisonError::into_inner);
        let result = match &change.dir {
            None if current.as_deref() != Some(change.name.as_str()) => {
                Err(BackendError::invalid(match current.as_deref() {
                    Some(now) => format!("adapter `{}` is not loaded (`{now}` is)", change.name),
                    None => format!("adapter `{}` is not loaded (none is)", change.name),
                }))
            }
            dir => backend.set_adapter(dir.as_deref()),
        };
        if result.is_ok() {
            *current = change.dir.as_ref().map(|_| change.name.clone());
            tracing::info!(
                "adapter {}: {}",
                if change.dir.is_some() {
                    "loaded"
                } else {
                    "unloaded"
                },
                change.name
            );
        }
        let _ = change.reply.send(result);
    }

    fn add(&mut self, job: Job) {
        let id = self.next_job;
        self.next_job += 1;
        let open = vec![true; job.sequences.len()];
        self.jobs.insert(
            id,
            Live {
                job,
                open,
                submitted: false,
            },
        );
        self.waiting.push_back(Waiting::Job(id));
    }

    /// Takes every job that has arrived, without waiting.
    fn take_new(&mut self, jobs: &Receiver<Work>) {
        loop {
            match jobs.try_recv() {
                Ok(work) => self.take(work),
                Err(TryRecvError::Empty) => return,
                Err(TryRecvError::Disconnected) => {
                    self.closed = true;
                    return;
                }
            }
        }
    }

    /// The waiting jobs that fit under the limit, oldest first, up to an adapter change, as
    /// sequences to submit (jobs whose client left meanwhile are dropped, and jobs that name
    /// another model than the adapter loaded fail).
    fn admit(&mut self) -> Vec<(u64, GenerationRequest)> {
        let mut submit = Vec::new();
        while let Some(Waiting::Job(id)) = self.waiting.front() {
            let id = *id;
            let Some(live) = self.jobs.get(&id) else {
                self.waiting.pop_front();
                continue;
            };
            if live.gone() {
                self.waiting.pop_front();
                self.drop_job(id);
                continue;
            }
            if let Some(why) = self.wrong_model(&live.job) {
                self.waiting.pop_front();
                self.fail_waiting(id, &why);
                continue;
            }
            let Some(live) = self.jobs.get_mut(&id) else {
                continue;
            };
            let n = live.job.sequences.len();
            if self.running > 0 && self.running + n > self.max_running {
                break;
            }
            self.waiting.pop_front();
            live.submitted = true;
            submit.extend(
                live.job
                    .sequences
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (key(id, i), r.clone())),
            );
            self.running += n;
            self.queue.started(n);
        }
        submit
    }

    /// Why a job cannot run on the weights loaded now: once an adapter is loaded, a request
    /// that names a model must name it (a trainer's request for a version the server has not
    /// loaded must not run on another). Without an adapter any name is served, as before
    /// adapters existed.
    fn wrong_model(&self, job: &Job) -> Option<BackendError> {
        let current = self.adapter.lock().unwrap_or_else(PoisonError::into_inner);
        match (current.as_deref(), job.model.as_deref()) {
            (Some(now), Some(asked)) if asked != now => Some(BackendError::invalid(format!(
                "model `{asked}` is not loaded: this server serves adapter `{now}`"
            ))),
            _ => None,
        }
    }

    /// Fails every choice of a job that never ran.
    fn fail_waiting(&mut self, id: u64, err: &BackendError) {
        let Some(live) = self.jobs.remove(&id) else {
            return;
        };
        self.queue.dropped_waiting(live.open.len());
        for index in 0..live.open.len() {
            let _ = live.job.events.send(Event::Done {
                index,
                result: Err(err.clone()),
            });
        }
    }

    /// Answers what ended, streams what progressed, takes new jobs, drops the abandoned ones.
    fn on_step(&mut self, step: BackendStep, jobs: &Receiver<Work>) -> BackendOrders {
        for (k, result) in step.finished {
            let (id, index) = split(k);
            let Some(live) = self.jobs.get_mut(&id) else {
                continue;
            };
            if !live.open.get(index).copied().unwrap_or(false) {
                continue;
            }
            live.open[index] = false;
            self.running = self.running.saturating_sub(1);
            self.queue.ended(false);
            if live.job.events.send(Event::Done { index, result }).is_err() {
                live.job.gone.store(true, Ordering::SeqCst);
            }
            if !live.open.contains(&true) {
                self.jobs.remove(&id);
            }
        }
        for (k, progress) in step.progress {
            let (id, index) = split(k);
            let Some(live) = self.jobs.get_mut(&id) else {
                continue;
            };
            if live.job.stream
                && live
                    .job
                    .events
                    .send(Event::Tokens { index, progress })
                    .is_err()
            {
                live.job.gone.store(true, Ordering::SeqCst);
            }
        }
        self.take_new(jobs);
        let cancel = self.cancel_gone();
        BackendOrders {
            submit: self.admit(),
            cancel,
        }
    }

    /// Drops every job whose client left (waiting ones leave the queue at once); returns the
    /// keys of their live sequences, for the backend to cancel.
    fn cancel_gone(&mut self) -> Vec<u64> {
        let gone: Vec<u64> = self
            .jobs
            .iter()
            .filter(|(_, l)| l.gone())
            .map(|(&id, _)| id)
            .collect();
        gone.into_iter().flat_map(|id| self.drop_job(id)).collect()
    }

    /// Drops job `id` as abandoned; returns the keys of its sequences still running.
    fn drop_job(&mut self, id: u64) -> Vec<u64> {
        let Some(live) = self.jobs.remove(&id) else {
            return Vec::new();
        };
        let open: Vec<usize> = (0..live.open.len()).filter(|&i| live.open[i]).collect();
        if !live.submitted {
            // Its id stays in `waiting` until `admit` reaches it and finds nothing.
            self.queue.dropped_waiting(open.len());
            return Vec::new();
        }
        for _ in &open {
            self.running = self.running.saturating_sub(1);
            self.queue.ended(true);
        }
        open.into_iter().map(|index| key(id, index)).collect()
    }

    /// Fails every submitted sequence not yet answered (the backend stopped).
    fn fail_submitted(&mut self, err: &BackendError) {
        let ids: Vec<u64> = self
            .jobs
            .iter()
            .filter(|(_, l)| l.submitted)
            .map(|(&id, _)| id)
            .collect();
        for id in ids {
            let Some(live) = self.jobs.remove(&id) else {
                continue;
            };
            for (index, _) in live.open.iter().enumerate().filter(|(_, &o)| o) {
                self.running = self.running.saturating_sub(1);
                self.queue.ended(false);
                let _ = live.job.events.send(Event::Done {
                    index,
                    result: Err(err.clone()),
                });
            }
        }
    }
}
