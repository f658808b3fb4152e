//! Rollouts sampled ahead of the updates (`rollout.max_staleness = k > 0`): step s's trials are
//! sampled on the rollout servers with the weights after update max(0, s - k), by a worker
//! thread, while the trainer updates. Which weights sample which step follows from k alone,
//! never from timing, so a run is deterministic; a checkpoint keeps the adapters of the steps
//! still due, so a resumed run samples them again with the same weights.
//!
//! The worker takes jobs in step order: it loads a job's adapter into the servers when the
//! weights change (under the name `ahead-w{n}`, n the updates behind it) and plays the job's
//! trials. The trainer rescores the samples with its current weights as for any sampler, and
//! the TIS weight min(pi_current / pi_sampler, C) corrects for the lag as for the engine gap.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::Instant;

use crate::error::TrainError;
use crate::policy::remote::RolloutSampler;
use crate::policy::{ChatMessage, GenRequest, Generation, Policy, TextCodec};
use crate::rollout::{run_trials_with, EnvFactory, RolloutSpec, TrialRequest};
use crate::sample::Trial;

/// The checkpoint folder that holds the adapters of the steps still due.
pub(crate) const CHECKPOINT_DIR: &str = "ahead";

/// The weights step `step` samples with: the updates done before it, at most `staleness` behind.
pub(crate) fn weights_of(step: usize, staleness: usize) -> usize {
    step.saturating_sub(staleness)
}

/// The adapter name (and folder name) of the weights after `weights` updates.
pub(crate) fn adapter_name(weights: usize) -> String {
    format!("ahead-w{weights}")
}

/// One step's rollouts for the worker.
pub(crate) struct Job {
    pub step: usize,
    /// The updates done on the weights that sample it.
    pub weights: usize,
    /// Those weights as a PEFT adapter.
    pub adapter: PathBuf,
    pub requests: Vec<TrialRequest>,
    pub spec: RolloutSpec,
}

/// A step's rollouts, sampled.
pub(crate) struct Sampled {
    pub step: usize,
    pub weights: usize,
    pub trials: Vec<Trial>,
    /// The worker's seconds on this step (adapter load included).
    pub sampling_seconds: f64,
    /// Of which loading the adapter into the servers.
    pub sync_seconds: f64,
}

/// The rollout sampler seen as a policy, for the rollout engine on the worker thread.
struct SamplerPolicy<'s> {
    sampler: &'s mut dyn RolloutSampler,
    codec: Arc<dyn TextCodec>,
}

impl Policy for SamplerPolicy<'_> {
    fn generate(&mut self, requests: &[GenRequest]) -> Result<Vec<Generation>, TrainError> {
        self.sampler.generate(requests)
    }

    fn logprobs_are_trainers(&self) -> bool {
        false
    }

    fn text_codec(&self) -> Option<Arc<dyn TextCodec>> {
        Some(Arc::clone(&self.codec))
    }

    fn encode(
        &mut self,
        messages: &[ChatMessage],
        response_prefix: &str,
    ) -> Result<Vec<u32>, TrainError> {
        self.codec.encode(messages, response_prefix)
    }
}

/// The worker and the steps handed to it.
pub(crate) struct Ahead<'scope> {
    jobs: Option<mpsc::Sender<Job>>,
    results: mpsc::Receiver<Result<Sampled, TrainError>>,
    /// Set when the run stops early: the worker takes no further job.
    stop: Arc<AtomicBool>,
    worker: Option<ScopedJoinHandle<'scope, Box<dyn RolloutSampler>>>,
    /// Steps handed over and not yet taken, with their weights, in order.
    due: VecDeque<(usize, usize)>,
    /// Where the adapters of the steps due are written.
    adapters: PathBuf,
}

impl<'scope> Ahead<'scope> {
    /// Starts the worker in `scope`, sampling on `sampler` with envs from `make_env`; adapters
    /// are written under `adapters`.
    pub fn start<'env>(
        scope: &'scope Scope<'scope, 'env>,
        mut sampler: Box<dyn RolloutSampler>,
        codec: Arc<dyn TextCodec>,
        make_env: Arc<EnvFactory<'env>>,
        adapters: &Path,
    ) -> Self {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let (outbox, results) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let worker = scope.spawn(move || {
            let mut loaded: Option<usize> = None;
            for job in inbox {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let result = sample(sampler.as_mut(), &codec, &*make_env, &job, &mut loaded);
                if result.is_err() {
                    // The servers may hold anything now: the next job loads its adapter again.
                    loaded = None;
                }
                if outbox.send(result).is_err() {
                    break;
                }
            }
            sampler
        });
        Self {
            jobs: Some(jobs),
            results,
            stop,
            worker: Some(worker),
            due: VecDeque::new(),
            adapters: adapters.to_path_buf(),
        }
    }

    /// The folder of the adapter of the weights after `weights` updates.
    pub fn adapter_dir(&self, weights: usize) -> PathBuf {
        self.adapters.join(adapter_name(weights))
    }

    /// Hands a step to the worker (its adapter already written).
    pub fn submit(&mut self, job: Job) -> Result<(), TrainError> {
        self.due.push_back((job.step, job.weights));
        self.jobs
            .as_ref()
            .and_then(|j| j.send(job).ok())
            .ok_or_else(|| TrainError::Policy("the rollout worker has stopped".into()))
    }

    /// The steps handed over and not yet taken, with their weights.
    pub fn due(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.due.iter().copied()
    }

    /// Waits for step `step`'s rollouts (the next due), then removes the adapters no step due
    /// still needs.
    pub fn take(&mut self, step: usize) -> Result<Sampled, TrainError> {
        match self.due.front() {
            Some(&(next, _)) if next == step => {}
            other => {
                return Err(TrainError::Policy(format!(
                    "step {step}'s rollouts were not handed to the rollout worker (next due: {})",
                    other.map_or("none".into(), |(s, _)| s.to_string())
                )))
            }
        }
        let sampled = self
            .results
            .recv()
            .map_err(|_| TrainError::Policy("the rollout worker stopped".into()))??;
        self.due.pop_front();
        if sampled.step != step {
            return Err(TrainError::Policy(format!(
                "the rollout worker answered step {} for step {step}",
                sampled.step
            )));
        }
        // Steps are handed over in order with weights that never go down: an adapter older
        // than the next due step's is not needed again.
        let oldest = self.due.front().map_or(sampled.weights + 1, |&(_, w)| w);
        for w in sampled.weights..oldest {
            crate::run_dir::remove_dir_if_present(&self.adapter_dir(w))?;
        }
        Ok(sampled)
    }

    /// Stops the worker after the job it is on and gives back the sampler; fails when the
    /// worker panicked.
    pub fn finish(mut self) -> Result<Box<dyn RolloutSampler>, TrainError> {
        self.stop.store(true, Ordering::SeqCst);
        self.jobs = None;
        self.worker
            .take()
            .and_then(|w| w.join().ok())
            .ok_or_else(|| TrainError::Policy("the rollout worker panicked".into()))
    }
}

/// Samples one job: loads its adapter unless the servers have its weights, then plays its
/// trials.
fn sample(
    sampler: &mut dyn RolloutSampler,
    codec: &Arc<dyn TextCodec>,
    make_env: &EnvFactory<'_>,
    job: &Job,
    loaded: &mut Option<usize>,
) -> Result<Sampled, TrainError> {
    let t = Instant::now();
    let mut sync_seconds = 0.0;
    if *loaded != Some(job.weights) {
        sampler.load_adapter(&job.adapter, &adapter_name(job.weights))?;
        *loaded = Some(job.weights);
        sync_seconds = t.elapsed().as_secs_f64();
        tracing::info!(
            step = job.step,
            weights = job.weights,
            seconds = sync_seconds,
            "adapter loaded into the rollout servers"
        );
    }
    let mut policy = SamplerPolicy {
        sampler,
        codec: Arc::clone(codec),
    };
    let trials = run_trials_with(&mut policy, make_env, &job.requests, &job.spec, None, None)?;
    Ok(Sampled {
        step: job.step,
        weights: job.weights,
        trials,
        sampling_seconds: t.elapsed().as_secs_f64(),
        sync_seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_samples_with_the_weights_at_most_k_updates_behind() {
        assert_eq!(
            (0..6).map(|s| weights_of(s, 0)).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4, 5]
        );
        assert_eq!(
            (0..6).map(|s| weights_of(s, 1)).collect::<Vec<_>>(),
            [0, 0, 1, 2, 3, 4]
        );
        assert_eq!(
            (0..6).map(|s| weights_of(s, 2)).collect::<Vec<_>>(),
            [0, 0, 0, 1, 2, 3]
        );
    }
}
