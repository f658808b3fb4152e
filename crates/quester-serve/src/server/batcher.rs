//! The generation thread: owns the backend, gathers requests that arrive together into one batch.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use super::backend::{BackendError, ChatBackend, GenerationOutput, GenerationRequest};

/// The sequences of one HTTP request and where to send their outputs.
pub(crate) struct Job {
    pub sequences: Vec<GenerationRequest>,
    pub reply: Sender<Result<Vec<GenerationOutput>, BackendError>>,
}

/// Runs until every job sender is dropped. A batch holds at most `max_batch` sequences unless
/// one request alone has more (it is then generated alone).
pub(crate) fn run_batches(
    mut backend: Box<dyn ChatBackend>,
    jobs: Receiver<Job>,
    max_batch: usize,
    window: Duration,
) {
    let mut carried: Option<Job> = None;
    loop {
        let first = match carried.take() {
            Some(job) => job,
            None => match jobs.recv() {
                Ok(job) => job,
                Err(_) => return,
            },
        };
        let mut batch = vec![first];
        let mut size = batch[0].sequences.len();
        let deadline = Instant::now() + window;
        let mut closed = false;
        while size < max_batch {
            let left = deadline.saturating_duration_since(Instant::now());
            match jobs.recv_timeout(left) {
                Ok(job) if size + job.sequences.len() > max_batch => {
                    carried = Some(job);
                    break;
                }
                Ok(job) => {
                    size += job.sequences.len();
                    batch.push(job);
                }
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    closed = true;
                    break;
                }
            }
        }
        run_one(backend.as_mut(), batch);
        if closed && carried.is_none() {
            return;
        }
    }
}

fn run_one(backend: &mut dyn ChatBackend, batch: Vec<Job>) {
    let sequences: Vec<GenerationRequest> = batch
        .iter()
        .flat_map(|job| job.sequences.iter().cloned())
        .collect();
    // A panicking backend must not take the server down: the batch fails with its message.
    let results =
        catch_unwind(AssertUnwindSafe(|| backend.generate(&sequences))).unwrap_or_else(|panic| {
            let why = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| {
                    panic
                        .downcast_ref::<&str>()
                        .map(std::string::ToString::to_string)
                })
                .unwrap_or_else(|| "unknown panic".to_string());
            let err = BackendError::internal(format!("generation panicked: {why}"));
            vec![Err(err); sequences.len()]
        });
    let results = if results.len() == sequences.len() {
        results
    } else {
        let err = BackendError::internal(format!(
            "backend returned {} outputs for {} sequences",
            results.len(),
            sequences.len()
        ));
        vec![Err(err); sequences.len()]
    };
    let mut results = results.into_iter();
    for job in batch {
        // A request answers with all its choices or with its first error.
        let mine: Result<Vec<GenerationOutput>, BackendError> =
            results.by_ref().take(job.sequences.len()).collect();
        // The requester may have gone (client hung up): nothing to do then.
        let _ = job.reply.send(mine);
    }
}
